#version 450
#extension GL_GOOGLE_include_directive : require
// Crowds: one instanced draw skins every copy of a mesh. Copy gl_InstanceIndex reads its bones
// at bones[gl_InstanceIndex * joint_count + joint] (written by crowd.comp this frame) and its
// model matrix, normal matrix and colour from a storage buffer. The skinning math is the one of
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

#ifdef SKIN_LBS
layout(std430, set = 0, binding = 0) readonly buffer CrowdBones {
    mat3x4 bones[];
};
#else
layout(std430, set = 0, binding = 0) readonly buffer CrowdBones {
    mat2x4 bones[];
};
#endif

struct Copy {
    mat4 model;
    mat4 normal_matrix;
    vec4 color;
};
layout(std430, set = 0, binding = 9) readonly buffer CrowdCopies {
    Copy copies[];
};

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
        mat3x4 m = lbs_blend(bones[j.x], bones[j.y], bones[j.z], bones[j.w], in_weights);
#ifdef SKIN_INFLUENCES_8
        m += lbs_blend(bones[j1.x], bones[j1.y], bones[j1.z], bones[j1.w], in_weights_1);
#endif
        p = lbs_transform_point(m, in_position);
        n = lbs_transform_normal(m, in_normal);
#else
        mat2x4 dq = dq_blend(bones[j.x], bones[j.y], bones[j.z], bones[j.w], in_weights);
#ifdef SKIN_INFLUENCES_8
        dq += dq_blend_more(bones[j.x][0], bones[j1.x], bones[j1.y], bones[j1.z], bones[j1.w],
                            in_weights_1);
#endif
        if (dq_normalize(dq)) {
            p = dq_transform_point(dq, in_position);
            n = dq_transform_normal(dq, in_normal);
        }
#endif
    }
    Copy copy = copies[gl_InstanceIndex];
    vec4 world = copy.model * vec4(p, 1.0);
    out_world_position = world.xyz;
    out_normal = mat3(copy.normal_matrix) * n;
    out_bone_weight = dot(vec4(equal(in_bone_ids, ivec4(inst.debug.y))), in_weights);
#ifdef SKIN_INFLUENCES_8
    out_bone_weight += dot(vec4(equal(in_bone_ids_1, ivec4(inst.debug.y))), in_weights_1);
#endif
    out_color = copy.color;
    gl_Position = pc.view_projection * world;
}
