#version 450
#extension GL_GOOGLE_include_directive : require
// The rendering vertex shader: the seed's DQS shader as valid Vulkan GLSL (the loose
// `uniform mat4 u_view_projection` became a push constant). Variants (see include/skin.glsl for
// the methods' defines; SKIN_AUX adds the aux input at location 6, SKIN_INFLUENCES_8 the inputs
// at locations 4 and 5):
//   SKIN_NONE      no skinning: the rest mesh (the benchmarks' baseline for what skinning costs);
//   SKIN_READBACK  writes each skinned position and normal to a storage buffer at
//                  gl_VertexIndex instead of feeding a rasterizer (drawn as points with rasterizer
//                  discard), so tests read back exactly what this shader computes.
//   SKIN_DDM       Direct Delta Mush: no joints and weights; each vertex's Omega and bones come
//                  from texel buffers (include/ddm_inputs.glsl, as in skin.comp), and the bone
//                  heat map has no weights to show (out_bone_weight 0).

#include "include/skin.glsl"
#include "include/morph.glsl"
#include "include/vertex_data.glsl"

layout(location = 0) in vec3 in_position;
layout(location = 1) in vec4 in_normal;  // mesh_normal() reads it
#ifdef SKIN_DDM
#include "include/ddm_inputs.glsl"
#else
layout(location = 2) in uvec4 in_bone_ids;
layout(location = 3) in vec4 in_weights;
#ifdef SKIN_INFLUENCES_8
layout(location = 4) in uvec4 in_bone_ids_1;
layout(location = 5) in vec4 in_weights_1;
#define SKIN_INFLUENCES ivec4(in_bone_ids), in_weights, ivec4(in_bone_ids_1), in_weights_1
#else
#define SKIN_INFLUENCES ivec4(in_bone_ids), in_weights
#endif
#endif
#ifdef SKIN_AUX
layout(location = 6) in vec4 in_aux;  // xyz: center of rotation, w: DQS blend weight
#define SKIN_AUX_ARG in_aux,
#else
#define SKIN_AUX_ARG
#endif

layout(location = 0) out vec3 out_normal;

layout(push_constant) uniform PushConstants {
    mat4 view_projection;
#ifdef SKIN_READBACK
    // Where this draw's positions and normals start in out_data, in floats.
    uint position_base;
    uint normal_base;
#endif
} pc;

#ifdef SKIN_READBACK
layout(std430, set = 0, binding = 1) writeonly buffer SkinnedVertices {
    float out_data[];
};
#else
#include "include/instance.glsl"
layout(location = 1) out vec3 out_world_position;
layout(location = 2) out float out_bone_weight;
#ifdef SURFACE
// Only the SURFACE variants (skin_<method>[_8]_surface.vert, with skin_surface.frag: textured
// materials, meshes with colours, instances with a scalar) pass these on; the others declare
// none of them, since lavapipe interpolates every fragment input a shader declares.
// A per-vertex scalar in 0..1 shown as a heat map in debug mode 2 (e.g. |DQS - LBS|, scaled on
// the host); instances without one bind any float buffer here (the mode is off for them).
layout(location = 9) in float in_scalar;
layout(location = 6) out float out_scalar;
// The material's inputs (shader_interface.SURFACE_INPUTS): TEXCOORD_0 and the linear COLOR_0.
layout(location = 7) in vec2 in_uv;
layout(location = 8) in vec4 in_color;
layout(location = 3) out vec2 out_uv;
layout(location = 4) out vec4 out_color;
#endif
#endif

void main() {
    vec3 p = in_position;
    vec3 n = mesh_normal(in_normal);
#ifdef SKIN_DDM
    // as skin.comp: Omega is about the rest position, the morph delta moves the vertex in it
    vec3 rest = p;
    morph_vertex(gl_VertexIndex, p, n);  // the renderer draws with vertexOffset 0
    ddm_skin_input(gl_VertexIndex, rest, p - rest, n, ddm_mesh_diag2(), p, n);
#else
    morph_vertex(gl_VertexIndex, p, n);  // the renderer draws with vertexOffset 0
#ifndef SKIN_NONE
    skin_vertex(SKIN_INFLUENCES, SKIN_AUX_ARG p, n, p, n);
#endif
#endif
#ifdef SKIN_READBACK
    out_normal = n;
    gl_Position = pc.view_projection * vec4(p, 1.0);
    gl_PointSize = 1.0;
    uint i = pc.position_base + 3u * uint(gl_VertexIndex);
    uint k = pc.normal_base + 3u * uint(gl_VertexIndex);
    out_data[i] = p.x;
    out_data[i + 1u] = p.y;
    out_data[i + 2u] = p.z;
    out_data[k] = n.x;
    out_data[k + 1u] = n.y;
    out_data[k + 2u] = n.z;
#else
    vec4 world = inst.model * vec4(p, 1.0);
    out_world_position = world.xyz;
    out_normal = mat3(inst.normal_matrix) * n;
#ifdef SURFACE
    out_scalar = in_scalar;
#endif
#ifdef SKIN_DDM
    out_bone_weight = 0.0;
#else
    out_bone_weight = dot(vec4(equal(in_bone_ids, uvec4(inst.debug.y))), in_weights);
#ifdef SKIN_INFLUENCES_8
    out_bone_weight += dot(vec4(equal(in_bone_ids_1, uvec4(inst.debug.y))), in_weights_1);
#endif
#endif
#ifdef SURFACE
    out_uv = in_uv;
    out_color = in_color;
#endif
    gl_Position = pc.view_projection * world;
#endif
}
