#version 450
// The label overlay: an RGBA8 image composed on the host (sRGB colour, straight alpha, rows from
// the top), one texel per pixel of a uniform texel buffer, blended over the frame. Pixels
// outside the image (a window resized since it was composed) and transparent ones are left.

// The image may be drawn in parts (a device's maxTexelBufferElements holds fewer pixels): each
// part is a band of whole rows, its own texel view, drawn with a scissor over its rows.
layout(set = 0, binding = 0) uniform samplerBuffer overlay;  // R8G8B8A8_UNORM texels

layout(push_constant) uniform OverlayPush {
    ivec2 size;  // the image's width and height in pixels
    int first_row;  // the part's first row of the image
    int rows;  // and its rows
} pc;

layout(location = 0) out vec4 out_color;

vec3 srgb_to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(vec3(0.04045), c));
}

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    int row = p.y - pc.first_row;
    if (p.x >= pc.size.x || p.y >= pc.size.y || row < 0 || row >= pc.rows) {
        discard;
    }
    vec4 c = texelFetch(overlay, row * pc.size.x + p.x);
    if (c.a == 0.0) {
        discard;
    }
    out_color = vec4(srgb_to_linear(c.rgb), c.a);  // the sRGB target encodes it again
}
