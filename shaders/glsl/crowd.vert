#version 450
#extension GL_GOOGLE_include_directive : require
// Crowds: one instanced draw skins every copy of a mesh. Copy gl_InstanceIndex reads its bones
// at bone gl_InstanceIndex * joint_count + joint (written by crowd.comp this frame) and its
// model matrix, normal matrix and colour from a texel buffer. The skinning math is the one of
// include/dqs.glsl and include/lbs.glsl, as in skin.vert. Variants: SKIN_LBS (mat3x4 bones),
// SKIN_INFLUENCES_8 (inputs at locations 4 and 5).

#include "include/dqs.glsl"
#include "include/lbs.glsl"

layout(location = 0) in vec3 in_position;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in ivec4 in_bone_ids;
layout(location = 3) in vec4 in_weights;
#ifdef SKIN_INFLUENCES_8
layout(location = 4) in ivec4 in_bone_ids_1;
layout(location = 5) in vec4 in_weights_1;
#endif

layout(location = 0) out vec3 out_normal;
layout(location = 1) out vec3 out_world_position;
layout(location = 2) out float out_bone_weight;
layout(location = 3) flat out vec4 out_color;

layout(push_constant) uniform PushConstants {
    mat4 view_projection;
    uint joint_count;
} pc;

#include "include/instance.glsl"

// Texel buffers: on lavapipe texel fetches are much faster than storage-buffer reads.
layout(set = 0, binding = 0) uniform samplerBuffer bones;   // rgba32f, BONE_TEXELS per bone
layout(set = 0, binding = 9) uniform samplerBuffer copies;  // rgba32f, 8 texels per copy:
// model (4 columns), normal matrix (3 columns, w unused), colour

#ifdef SKIN_LBS
mat3x4 bone(int i) {
    int t = 3 * i;
    return mat3x4(texelFetch(bones, t), texelFetch(bones, t + 1), texelFetch(bones, t + 2));
}
#else
mat2x4 bone(int i) {
    int t = 2 * i;
    return mat2x4(texelFetch(bones, t), texelFetch(bones, t + 1));
}
#endif

void main() {
    int base = gl_InstanceIndex * int(pc.joint_count);
    // zero-weight slots may name any joint: clamp, so no read leaves this copy's bones
    int last = int(pc.joint_count) - 1;
    ivec4 j = clamp(in_bone_ids, 0, last) + base;
    vec3 p = in_position;
    vec3 n = normalize(in_normal);
#ifdef SKIN_INFLUENCES_8
    ivec4 j1 = clamp(in_bone_ids_1, 0, last) + base;
    float weight_sum = dot(in_weights, vec4(1.0)) + dot(in_weights_1, vec4(1.0));
#else
    float weight_sum = dot(in_weights, vec4(1.0));
#endif
    if (weight_sum >= LBS_EPS) {
#ifdef SKIN_LBS
        mat3x4 m = lbs_blend(bone(j.x), bone(j.y), bone(j.z), bone(j.w), in_weights);
#ifdef SKIN_INFLUENCES_8
        m += lbs_blend(bone(j1.x), bone(j1.y), bone(j1.z), bone(j1.w), in_weights_1);
#endif
        p = lbs_transform_point(m, in_position);
        n = lbs_transform_normal(m, in_normal);
#else
        mat2x4 dq = dq_blend(bone(j.x), bone(j.y), bone(j.z), bone(j.w), in_weights);
#ifdef SKIN_INFLUENCES_8
        dq += dq_blend_more(bone(j.x)[0], bone(j1.x), bone(j1.y), bone(j1.z), bone(j1.w),
                            in_weights_1);
#endif
        if (dq_normalize(dq)) {
            p = dq_transform_point(dq, in_position);
            n = dq_transform_normal(dq, in_normal);
        }
#endif
    }
    int c = 8 * gl_InstanceIndex;
    mat4 model = mat4(texelFetch(copies, c), texelFetch(copies, c + 1), texelFetch(copies, c + 2),
                      texelFetch(copies, c + 3));
    mat3 normal_matrix = mat3(texelFetch(copies, c + 4).xyz, texelFetch(copies, c + 5).xyz,
                              texelFetch(copies, c + 6).xyz);
    vec4 world = model * vec4(p, 1.0);
    out_world_position = world.xyz;
    out_normal = normal_matrix * n;
    out_bone_weight = dot(vec4(equal(in_bone_ids, ivec4(inst.debug.y))), in_weights);
#ifdef SKIN_INFLUENCES_8
    out_bone_weight += dot(vec4(equal(in_bone_ids_1, ivec4(inst.debug.y))), in_weights_1);
#endif
    out_color = texelFetch(copies, c + 7);
    gl_Position = pc.view_projection * world;
}
