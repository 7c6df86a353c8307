#version 450
#extension GL_GOOGLE_include_directive : require
// Crowds: one instanced draw skins every copy in view of a mesh. Instance gl_InstanceIndex draws
// copy = visible[gl_InstanceIndex] (the list crowd_cull.comp compacted this frame), which reads
// its bones at bone copy * joint_count + joint (written by crowd.comp this frame) and its
// model matrix, normal matrix and colour from a texel buffer. The skinning is skin_vertex() of
// include/skin.glsl, as in skin.vert, reading the bones through BONE() / BONE_MATRIX() from the
// texel buffer. The copy's colour goes flat to skin.frag (CROWD) at location 5; with
// CROWD_SURFACE the material's inputs (UV, linear vertex colour at locations 7 and 8, a constant
// row without them) pass through at 3 and 4 as in skin.vert (untextured materials on meshes
// without colours draw with the variant without them). Each method's variant has its defines
// (vkdqs/methods.py); the bones' layout follows from them: 2 texels (the DQ), 3 with
// SKIN_BONES_ROWS (the matrix rows), 5 with SKIN_SECOND_BLOCK (the DQ, then the second block's
// rows); SKIN_AUX adds the aux input at location 6, SKIN_INFLUENCES_8 the inputs at 4 and 5.
// SKIN_DDM (Direct Delta Mush) reads no joints and weights: each vertex's Omega and bones come
// from the mesh's texel buffers (include/ddm_inputs.glsl), shared by every copy, and each slot's
// bone is read at the copy's first bone plus the slot's joint.

// Texel buffers: on lavapipe texel fetches are much faster than storage-buffer reads.
layout(set = 0, binding = 0) uniform samplerBuffer bones;   // rgba32f, BONE_TEXELS per bone
layout(set = 0, binding = 9) uniform samplerBuffer copies;  // rgba32f, 8 texels per copy:
// model (4 columns), normal matrix (3 columns, w unused here), colour
// the copies in view, compacted by crowd_cull.comp: instance i draws copy visible[i]
layout(set = 0, binding = 10) uniform usamplerBuffer visible;  // r32ui

#ifdef SKIN_BONES_ROWS
mat3x4 crowd_bone(int i) {
    int t = 3 * i;
    return mat3x4(texelFetch(bones, t), texelFetch(bones, t + 1), texelFetch(bones, t + 2));
}
#elif defined(SKIN_SECOND_BLOCK)
mat2x4 crowd_bone(int i) {
    int t = 5 * i;
    return mat2x4(texelFetch(bones, t), texelFetch(bones, t + 1));
}
mat3x4 crowd_bone_matrix(int i) {
    int t = 5 * i + 2;
    return mat3x4(texelFetch(bones, t), texelFetch(bones, t + 1), texelFetch(bones, t + 2));
}
#define BONE_MATRIX(i) crowd_bone_matrix(i)  // blend: [A | t]
#define BONE_SCALE(i) crowd_bone_matrix(i)   // dqs_blender: Blender's [S | s]
#else
mat2x4 crowd_bone(int i) {
    int t = 2 * i;
    return mat2x4(texelFetch(bones, t), texelFetch(bones, t + 1));
}
#endif
#ifdef SKIN_DDM
// Direct Delta Mush names each slot's bone by its joint: the copy's first bone is added here
int ddm_copy_base = 0;
#define BONE(i) crowd_bone(ddm_copy_base + (i))
#else
#define BONE(i) crowd_bone(i)
#endif
#define SKIN_BONES_EXTERNAL
#include "include/skin.glsl"
#include "include/vertex_data.glsl"

layout(location = 0) in vec3 in_position;
layout(location = 1) in vec4 in_normal;  // mesh_normal() reads it
#ifdef SKIN_DDM
// each vertex's Omega and bones, shared by all copies (include/ddm_inputs.glsl, as skin.vert)
#include "include/ddm_inputs.glsl"
#else
layout(location = 2) in uvec4 in_bone_ids;
layout(location = 3) in vec4 in_weights;
#ifdef SKIN_INFLUENCES_8
layout(location = 4) in uvec4 in_bone_ids_1;
layout(location = 5) in vec4 in_weights_1;
#endif
#endif
#ifdef SKIN_AUX
layout(location = 6) in vec4 in_aux;  // xyz: center of rotation, w: DQS blend weight
#define SKIN_AUX_ARG in_aux,
#else
#define SKIN_AUX_ARG
#endif

layout(location = 0) out vec3 out_normal;
layout(location = 1) out vec3 out_world_position;
layout(location = 2) out float out_bone_weight;
#ifdef CROWD_SURFACE
// shader_interface.SURFACE_INPUTS: TEXCOORD_0 and the linear COLOR_0. UVS / VERTEX_COLORS
// (shader_interface.CROWD_UVS_ID, CROWD_COLORS_ID) false: the input is not read and the output
// is 1.0, what the constant row holds (lavapipe then skips the fetch)
layout(location = 7) in vec2 in_uv;
layout(location = 8) in vec4 in_vertex_color;
layout(constant_id = 6) const bool UVS = true;
layout(constant_id = 7) const bool VERTEX_COLORS = true;
layout(location = 3) out vec2 out_uv;
layout(location = 4) out vec4 out_vertex_color;
#endif
layout(location = 5) flat out vec4 out_color;  // shader_interface.CROWD_COLOR_LOCATION

layout(push_constant) uniform PushConstants {
    mat4 view_projection;
    uint joint_count;
} pc;

#include "include/instance.glsl"

void main() {
    int copy = int(texelFetch(visible, gl_InstanceIndex).x);
    int base = copy * int(pc.joint_count);
    vec3 p;
    vec3 n;
#ifdef SKIN_DDM
    // its bones are within the skeleton (vkdqs.methods.check_ddm); crowds are not morphed
    ddm_copy_base = base;
    ddm_skin_input(gl_VertexIndex, in_position, vec3(0.0), mesh_normal(in_normal), ddm_mesh_diag2(),
                   p, n);
#else
    // zero-weight slots may name any joint: clamp, so no read leaves this copy's bones
    int last = int(pc.joint_count) - 1;
    ivec4 j = clamp(ivec4(in_bone_ids), 0, last) + base;
#ifdef SKIN_INFLUENCES_8
    ivec4 j1 = clamp(ivec4(in_bone_ids_1), 0, last) + base;
#define SKIN_INFLUENCES j, in_weights, j1, in_weights_1
#else
#define SKIN_INFLUENCES j, in_weights
#endif
    skin_vertex(SKIN_INFLUENCES, SKIN_AUX_ARG in_position, mesh_normal(in_normal), p, n);
#endif
    int c = 8 * copy;
    mat4 model = mat4(texelFetch(copies, c), texelFetch(copies, c + 1), texelFetch(copies, c + 2),
                      texelFetch(copies, c + 3));
    mat3 normal_matrix = mat3(texelFetch(copies, c + 4).xyz, texelFetch(copies, c + 5).xyz,
                              texelFetch(copies, c + 6).xyz);
    vec4 world = model * vec4(p, 1.0);
    out_world_position = world.xyz;
    out_normal = normal_matrix * n;
#ifdef SKIN_DDM
    out_bone_weight = 0.0;  // no joints and weights to show
#else
    out_bone_weight = dot(vec4(equal(ivec4(in_bone_ids), ivec4(inst.debug.y))), in_weights);
#ifdef SKIN_INFLUENCES_8
    out_bone_weight += dot(vec4(equal(ivec4(in_bone_ids_1), ivec4(inst.debug.y))), in_weights_1);
#endif
#endif
    out_color = texelFetch(copies, c + 7);
#ifdef CROWD_SURFACE
    out_uv = UVS ? in_uv : vec2(1.0);
    out_vertex_color = VERTEX_COLORS ? in_vertex_color : vec4(1.0);
#endif
    gl_Position = pc.view_projection * world;
}
