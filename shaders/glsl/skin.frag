#version 450
#extension GL_GOOGLE_include_directive : require
// Lighting for skinned meshes: a key light that follows the camera, a fill light, hemisphere
// ambient and a little Blinn-Phong specular on the mesh's base colour; or, in debug mode 1, the
// weight of one bone as a heat map; in debug mode 2, the vertex's scalar (0..1) as a heat map.
// Output is linear; the sRGB framebuffer encodes it.
// The base colour is the instance's colour (CROWD: the copy's, flat from crowd.vert at location
// 5) x the material's factor x its sRGB texture (set 1, sampled at the KHR_texture_transform of
// TEXCOORD_0) x the vertex colour; fragments whose alpha is below the material's cutoff are
// discarded (alphaMode MASK). Only the SURFACE variants (skin_surface.frag, and
// skin_crowd_surface.frag for crowds) have the UV and colour inputs, and the instance one the
// per-vertex scalar of debug mode 2: lavapipe interpolates every input a shader declares, used
// or not, which cost untextured draws ~25% of their frame. Untextured materials on meshes
// without colours (and without a scalar) draw with the variants without them.

#include "include/instance.glsl"

layout(location = 0) in vec3 in_normal;
layout(location = 1) in vec3 in_world_position;
layout(location = 2) in float in_bone_weight;
#ifdef CROWD
layout(location = 5) flat in vec4 in_color;  // shader_interface.CROWD_COLOR_LOCATION
#define BASE_COLOR in_color
#else
#define BASE_COLOR inst.base_color
#endif
#if defined(SURFACE) && !defined(CROWD)
#define SCALAR_INPUT
layout(location = 6) in float in_scalar;  // debug mode 2: a per-vertex value as a heat map
#endif

#ifdef SURFACE
#define SURFACE_INPUTS
layout(location = 3) in vec2 in_uv;
layout(location = 4) in vec4 in_vertex_color;
layout(set = 1, binding = 0) uniform sampler2D base_color_texture;
// Chosen per pipeline (shader_interface.TEXTURED_ID, VERTEX_COLORS_ID): untextured materials and
// meshes without colours skip the fetch and the multiply (lavapipe: ~10% of a frame).
layout(constant_id = 3) const bool TEXTURED = true;
layout(constant_id = 4) const bool VERTEX_COLORS = true;
#endif
// shader_interface.ALPHA_MASK_ID: false for opaque materials, which then have no discard at all
// (a shader that may discard loses early depth testing: lavapipe shades every covered fragment)
layout(constant_id = 5) const bool ALPHA_MASK = true;
layout(std140, set = 1, binding = 1) uniform MaterialBlock {
    vec4 base_color;  // linear RGBA factor
    vec4 uv_row0;     // the UV transform's first two rows (xyz)
    vec4 uv_row1;
    vec4 alpha;       // x: alpha cutoff (< 0: opaque)
} material;

layout(location = 0) out vec4 out_color;

vec3 heat(float t) {
    // blue -> cyan -> green -> yellow -> red
    t = clamp(t, 0.0, 1.0);
    return clamp(vec3(1.5 - abs(4.0 * t - 3.0), 1.5 - abs(4.0 * t - 2.0), 1.5 - abs(4.0 * t - 1.0)),
                 0.0, 1.0);
}

void main() {
    vec3 n = normalize(in_normal);
    if (!gl_FrontFacing) {
        n = -n;  // back faces only show through holes; light them as seen
    }
    vec3 view = normalize(inst.camera_position.xyz - in_world_position);
    vec4 base = BASE_COLOR;
    vec4 surface = material.base_color;
#ifdef SURFACE_INPUTS
    if (TEXTURED) {
        vec3 uvw = vec3(in_uv, 1.0);
        vec2 uv = vec2(dot(material.uv_row0.xyz, uvw), dot(material.uv_row1.xyz, uvw));
        surface *= texture(base_color_texture, uv);
    }
    if (VERTEX_COLORS) {
        surface *= in_vertex_color;
    }
#endif
    if (ALPHA_MASK && surface.a < material.alpha.x) {
        discard;
    }
    base.rgb *= surface.rgb;
    vec3 albedo = inst.debug.x == 1 ? heat(in_bone_weight) : base.rgb;
#ifdef SCALAR_INPUT
    if (inst.debug.x == 2) {
        albedo = heat(in_scalar);
    }
#endif
    vec3 to_key = -normalize(inst.key_light.xyz);
    vec3 to_fill = -normalize(inst.fill_light.xyz);
    float key = max(dot(n, to_key), 0.0);
    float fill = max(dot(n, to_fill), 0.0);
    float sky = 0.5 + 0.5 * n.y;  // hemisphere ambient: brighter from above
    vec3 h = normalize(to_key + view);
    float spec = key > 0.0 ? pow(max(dot(n, h), 0.0), 48.0) : 0.0;
    vec3 color = albedo * (key * inst.key_light.w + fill * inst.fill_light.w
                           + inst.ambient.rgb * mix(0.6, 1.0, sky))
                 + inst.ambient.w * spec * vec3(1.0);
    out_color = vec4(color, BASE_COLOR.a);
}
