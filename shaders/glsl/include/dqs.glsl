// Dual quaternion skinning math, shared by every DQS shader variant.
// No #version and no bindings here: only functions.
//
// Conventions (the same as vkdqs.dq): a quaternion is a vec4 (x, y, z, w); a dual quaternion is a
// mat2x4 whose column 0 is the real (rotation) part and column 1 the dual part, so a unit dual
// quaternion for rotation q and translation t has dual = 0.5 * (t, 0) * q.

// Below this length of the blended real part the blend carries no rotation (e.g. all weights are
// zero): the vertex is left at rest instead of dividing by ~0.
const float DQS_EPS = 1e-6;

vec3 rotate_vector(vec4 q, vec3 v) {
    return v + 2.0 * cross(q.xyz, cross(q.xyz, v) + q.w * v);
}

// Sign of influence i relative to the reference influence: q and -q are the same rotation, and
// blending them head to head would cancel, so every influence is turned into the hemisphere of the
// first one before blending.
float dq_sign(vec4 ref_real, vec4 real) {
    return dot(ref_real, real) < 0.0 ? -1.0 : 1.0;
}

// Dual quaternion linear blending of four influences, with antipodality correction against d0.
mat2x4 dq_blend(mat2x4 d0, mat2x4 d1, mat2x4 d2, mat2x4 d3, vec4 w) {
    vec4 s = vec4(1.0, dq_sign(d0[0], d1[0]), dq_sign(d0[0], d2[0]), dq_sign(d0[0], d3[0])) * w;
    return d0 * s.x + d1 * s.y + d2 * s.z + d3 * s.w;
}

// Four more influences (the 8-influence variant), signs still corrected against the first
// influence's real part ref_real.
mat2x4 dq_blend_more(vec4 ref_real, mat2x4 d4, mat2x4 d5, mat2x4 d6, mat2x4 d7, vec4 w) {
    vec4 s = vec4(dq_sign(ref_real, d4[0]), dq_sign(ref_real, d5[0]), dq_sign(ref_real, d6[0]),
                  dq_sign(ref_real, d7[0])) * w;
    return d4 * s.x + d5 * s.y + d6 * s.z + d7 * s.w;
}

// Divides the blended dual quaternion by the length of its real part. Returns false (and leaves
// dq alone) when that length is numerically zero.
bool dq_normalize(inout mat2x4 dq) {
    float len = length(dq[0]);
    if (len < DQS_EPS) {
        return false;
    }
    dq *= 1.0 / len;
    return true;
}

vec3 dq_translation(mat2x4 dq) {
    vec4 r = dq[0];
    vec4 d = dq[1];
    return 2.0 * (r.w * d.xyz - d.w * r.xyz + cross(r.xyz, d.xyz));
}

vec3 dq_transform_point(mat2x4 dq, vec3 p) {
    return rotate_vector(dq[0], p) + dq_translation(dq);
}

// Rigid transforms preserve angles, so a normal only needs the rotation.
vec3 dq_transform_normal(mat2x4 dq, vec3 n) {
    return normalize(rotate_vector(dq[0], n));
}
