#version 450
// The label overlay (vkdqs.overlay): one triangle that covers the screen, no vertex inputs;
// overlay.frag reads the host-composed image pixel by pixel.

void main() {
    vec2 p = vec2(float((gl_VertexIndex << 1) & 2), float(gl_VertexIndex & 2));
    gl_Position = vec4(2.0 * p - 1.0, 0.0, 1.0);
}
