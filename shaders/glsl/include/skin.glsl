// The bone block and skin_vertex(), shared by the vertex and compute shaders.
// Define SKIN_LBS for linear blend skinning; the default is dual quaternion skinning.

#include "dqs.glsl"
#include "lbs.glsl"

// The number of bones the block holds; the Skinner sets it to the skeleton's size.
layout(constant_id = 0) const int MAX_BONES = 128;

#ifdef SKIN_LBS
layout(std140, set = 0, binding = 0) uniform BoneBlock {
    mat3x4 bones[MAX_BONES];
};
#else
layout(std140, set = 0, binding = 0) uniform BoneBlock {
    mat2x4 bones[MAX_BONES];
};
#endif

// Skins one vertex. Weights are normalized, or all zero: then the vertex stays at rest.
void skin_vertex(ivec4 j, vec4 w, vec3 p, vec3 n, out vec3 skinned_p, out vec3 skinned_n) {
#ifdef SKIN_LBS
    if (dot(w, vec4(1.0)) < LBS_EPS) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
    mat3x4 m = lbs_blend(bones[j.x], bones[j.y], bones[j.z], bones[j.w], w);
    skinned_p = lbs_transform_point(m, p);
    skinned_n = lbs_transform_normal(m, n);
#else
    mat2x4 dq = dq_blend(bones[j.x], bones[j.y], bones[j.z], bones[j.w], w);
    if (!dq_normalize(dq)) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
    skinned_p = dq_transform_point(dq, p);
    skinned_n = dq_transform_normal(dq, n);
#endif
}
