// The bone blocks and skin_vertex(), shared by the vertex and compute shaders.
//
// Variants (defines; the interface differs, so each is its own SPIR-V module). Each skinning
// method of the registry (vkdqs/methods.py) has its block in skin_vertex() under its own define
// and says its layout with the defines the declarations below read:
//   SKIN_BONES_ROWS   the bone block holds the three rows of each bone's affine matrix (mat3x4),
//                     not its dual quaternion (mat2x4);
//   SKIN_SECOND_BLOCK a second block of mat3x4 rows per bone at binding 6 (SecondBlock);
//   SKIN_AUX          the per-vertex aux input (xyz: center of rotation, w: DQS blend weight).
// The methods' blocks:
//   default           dual quaternion skinning (DQS) of rigid bones;
//   SKIN_LBS          linear blend skinning: bones are 3x4 affine matrices;
//   SKIN_DQS_SCALE    two-phase DQS for bones with scale/shear (Kavan et al. 2008): each bone's
//                     skinning matrix is split into a scale/shear part S (blended linearly and
//                     applied to the rest vertex first) and a rigid part (blended with DQS);
//   SKIN_BLEND        LBS and DQS blended per vertex ("weight blended" skinning): the bone
//                     block holds the DQs, a second block the 3x4 matrices, and the per-vertex
//                     aux input's w the vertex's DQS fraction b: (1 - b) LBS + b DQS;
//   SKIN_COR          optimized centers of rotation (Le & Hodgins 2016): the bone block holds
//                     the DQs and the aux input's xyz the vertex's precomputed center c:
//                     p' = R(q) (p - c) + sum_k w_k M_k c, q the blended rotations;
//   SKIN_DQS_BLENDER  Blender's "Preserve Volume" (armature_deform.cc): per influence, the
//                     bone's scale matrix S (split in its rest frame, second block) moves
//                     its translation at the vertex into the DQ; signs flip against the
//                     running sum, in slot order;
//   SKIN_DDM          Direct Delta Mush (Le & Lewis 2019, variant 0; include/ddm.glsl): each
//                     vertex's precomputed Omega and bones stand for its joints and weights,
//                     so skin.comp, skin.vert and crowd.vert call ddm_skin_vertex() (through
//                     include/ddm_inputs.glsl, which reads them) instead of skin_vertex();
//   SKIN_INFLUENCES_8 eight influences per vertex (two ivec4/vec4 pairs) instead of four.

#include "dqs.glsl"
#include "lbs.glsl"

// skin_vertex() reads bone i as BONE(i) (the DQ, or the LBS rows) and BONE_MATRIX(i) /
// BONE_SCALE(i) (the second block's rows: "blend"'s [A | t], the scale matrices of dqs_scale and
// dqs_blender). With SKIN_BONES_EXTERNAL the includer defines them (crowd.vert: texel buffers);
// otherwise they index the uniform blocks below.
#ifndef SKIN_BONES_EXTERNAL
// The number of bones the blocks hold; the Skinner sets it to the skeleton's size.
layout(constant_id = 0) const int MAX_BONES = 128;

#ifdef SKIN_BONES_ROWS
layout(std140, set = 0, binding = 0) uniform BoneBlock {
    mat3x4 bones[MAX_BONES];
};
#else
layout(std140, set = 0, binding = 0) uniform BoneBlock {
    mat2x4 bones[MAX_BONES];
};
#endif

#ifdef SKIN_SECOND_BLOCK
// Per bone, the three rows of a second matrix (same layout as LBS bones): [S | 0], its scale/shear
// in rest space (dqs_scale); Blender's scale matrix [S | s] (dqs_blender); its whole skinning
// matrix [A | t] ("blend").
layout(std140, set = 0, binding = 6) uniform SecondBlock {
    mat3x4 bone_rows[MAX_BONES];
};
#endif

#define BONE(i) bones[i]
#define BONE_MATRIX(i) bone_rows[i]
#define BONE_SCALE(i) bone_rows[i]
#endif  // SKIN_BONES_EXTERNAL

#ifdef SKIN_DDM
#include "ddm.glsl"
#endif

#ifdef SKIN_DQS_BLENDER
vec4 quat_mul(vec4 a, vec4 b) {
    return vec4(a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz), a.w * b.w - dot(a.xyz, b.xyz));
}

mat3 quat_to_mat3(vec4 q) {
    vec3 x = rotate_vector(q, vec3(1.0, 0.0, 0.0));
    vec3 y = rotate_vector(q, vec3(0.0, 1.0, 0.0));
    return mat3(x, y, cross(x, y));
}

// Blender's add_weighted_dq_dq_pivot(sum, bone, pivot = p, w), the weight's sign following the
// running sum of the rotations q_k. Blender splits each skinning matrix M_k = R_k S_k (R_k rigid:
// q_k and translation t_k; S_k its scale in the rest frame), moves the translation e = S_k p - p
// the scale gives the vertex into the DQ's dual part, d_k + 0.5 q_k e, and applies the normalized
// blend to p. Since d_k = 0.5 t_k q_k and q_k (S_k p) = (R_k S_k p) q_k, the dual part is
// 0.5 (M_k p - p) q_k, and the p terms sum to |sum| R(q) p, which the rotation's R(q) p cancels:
// the position is (sum w (M_k p) q_k q*).xyz / |sum w q_k|, with q the normalized sum. That is
// what `carried` sums (the second block holds M_k's rows): exact in float32 where t_k and S_k p
// are large beside M_k p (a quantized mesh, whose joint matrices scale it by 1e-4, cancelled to a
// thousandth of the model). Blender's deform matrix for the normal needs sum w S_k, S_k =
// R(q_k)^T M_k: accumulated transposed, S_k^T = A_k^T R(q_k).
void blender_add(mat2x4 bone, mat3x4 rows, float wk, vec3 p, inout vec4 sum, inout vec4 carried,
                 inout mat3 scale_t) {
    if (wk == 0.0) {
        return;
    }
    float signed_w = dot(bone[0], sum) < 0.0 ? -wk : wk;
    sum += bone[0] * signed_w;
    carried += quat_mul(vec4(lbs_transform_point(rows, p), 0.0), bone[0]) * signed_w;
    scale_t += mat3(rows[0].xyz, rows[1].xyz, rows[2].xyz) * quat_to_mat3(bone[0]) * wk;
}
#endif

#ifndef SKIN_DDM  // Direct Delta Mush skins with ddm_skin_vertex() (include/ddm.glsl)
// Skins one vertex with four influences (j1/w1 add four more in the 8-influence variant).
// Weights are normalized, or all zero: then the vertex stays at rest.
void skin_vertex(ivec4 j, vec4 w,
#ifdef SKIN_INFLUENCES_8
                 ivec4 j1, vec4 w1,
#endif
#ifdef SKIN_AUX
                 vec4 aux,
#endif
                 vec3 p, vec3 n, out vec3 skinned_p, out vec3 skinned_n) {
#ifdef SKIN_INFLUENCES_8
    float weight_sum = dot(w, vec4(1.0)) + dot(w1, vec4(1.0));
#else
    float weight_sum = dot(w, vec4(1.0));
#endif
    if (weight_sum < LBS_EPS) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
#if defined(SKIN_BLEND)
    mat3x4 m = lbs_blend(BONE_MATRIX(j.x), BONE_MATRIX(j.y), BONE_MATRIX(j.z),
                         BONE_MATRIX(j.w), w);
#ifdef SKIN_INFLUENCES_8
    m += lbs_blend(BONE_MATRIX(j1.x), BONE_MATRIX(j1.y), BONE_MATRIX(j1.z),
                   BONE_MATRIX(j1.w), w1);
#endif
    vec3 lbs_p = lbs_transform_point(m, p);
    vec3 lbs_n = lbs_transform_normal(m, n);
    mat2x4 dq = dq_blend(BONE(j.x), BONE(j.y), BONE(j.z), BONE(j.w), w);
#ifdef SKIN_INFLUENCES_8
    dq += dq_blend_more(BONE(j.x)[0], BONE(j1.x), BONE(j1.y), BONE(j1.z), BONE(j1.w), w1);
#endif
    vec3 dqs_p = p;
    vec3 dqs_n = normalize(n);
    if (dq_normalize(dq)) {
        dqs_p = dq_transform_point(dq, p);
        dqs_n = dq_transform_normal(dq, n);
    }
    float b = aux.w;
    skinned_p = mix(lbs_p, dqs_p, b);
    vec3 blended_n = mix(lbs_n, dqs_n, b);
    float len = length(blended_n);
    // opposite LBS and DQS normals blend to ~0: take the DQS normal there
    skinned_n = len < LBS_EPS ? dqs_n : blended_n / len;
#elif defined(SKIN_COR)
    // The rotation: DQS's blend of the real parts (same signs), normalized. The center's
    // position: LBS of c, each bone's rigid transform applied to c, from its DQ.
    vec3 c = aux.xyz;
    vec4 r0 = BONE(j.x)[0];
    vec4 s = vec4(1.0, dq_sign(r0, BONE(j.y)[0]), dq_sign(r0, BONE(j.z)[0]),
                  dq_sign(r0, BONE(j.w)[0])) * w;
    vec4 q = r0 * s.x + BONE(j.y)[0] * s.y + BONE(j.z)[0] * s.z + BONE(j.w)[0] * s.w;
    vec3 pc = w.x * dq_transform_point(BONE(j.x), c) + w.y * dq_transform_point(BONE(j.y), c) +
              w.z * dq_transform_point(BONE(j.z), c) + w.w * dq_transform_point(BONE(j.w), c);
#ifdef SKIN_INFLUENCES_8
    vec4 s1 = vec4(dq_sign(r0, BONE(j1.x)[0]), dq_sign(r0, BONE(j1.y)[0]),
                   dq_sign(r0, BONE(j1.z)[0]), dq_sign(r0, BONE(j1.w)[0])) * w1;
    q += BONE(j1.x)[0] * s1.x + BONE(j1.y)[0] * s1.y + BONE(j1.z)[0] * s1.z +
         BONE(j1.w)[0] * s1.w;
    pc += w1.x * dq_transform_point(BONE(j1.x), c) + w1.y * dq_transform_point(BONE(j1.y), c) +
          w1.z * dq_transform_point(BONE(j1.z), c) + w1.w * dq_transform_point(BONE(j1.w), c);
#endif
    float len = length(q);
    if (len < DQS_EPS) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
    q /= len;
    skinned_p = rotate_vector(q, p - c) + pc;
    skinned_n = normalize(rotate_vector(q, n));
#elif defined(SKIN_DQS_BLENDER)
    vec4 q = vec4(0.0);
    vec4 carried = vec4(0.0);
    mat3 st = mat3(0.0);
    blender_add(BONE(j.x), BONE_MATRIX(j.x), w.x, p, q, carried, st);
    blender_add(BONE(j.y), BONE_MATRIX(j.y), w.y, p, q, carried, st);
    blender_add(BONE(j.z), BONE_MATRIX(j.z), w.z, p, q, carried, st);
    blender_add(BONE(j.w), BONE_MATRIX(j.w), w.w, p, q, carried, st);
#ifdef SKIN_INFLUENCES_8
    blender_add(BONE(j1.x), BONE_MATRIX(j1.x), w1.x, p, q, carried, st);
    blender_add(BONE(j1.y), BONE_MATRIX(j1.y), w1.y, p, q, carried, st);
    blender_add(BONE(j1.z), BONE_MATRIX(j1.z), w1.z, p, q, carried, st);
    blender_add(BONE(j1.w), BONE_MATRIX(j1.w), w1.w, p, q, carried, st);
#endif
    // normalize_dq: divide by the weight sum, then by the rotation's length; mul_v3m3_dq's scale
    // matrix is neutral at the pivot, so the position needs only the normalized blend
    float q_len = length(q) / weight_sum;
    if (weight_sum <= 1e-4 || q_len < DQS_EPS) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
    q = normalize(q);
    vec4 placed = quat_mul(carried, vec4(-q.xyz, q.w)) * (1.0 / (q_len * weight_sum));
    skinned_p = placed.xyz;
    // the normal: cofactor of Blender's deform matrix R(q) S_blend, i.e. R(q) cof(S_blend) n
    // (st is S_blend transposed times the weight sum: its columns are S_blend's rows)
    vec3 a0 = st[0];
    vec3 a1 = st[1];
    vec3 a2 = st[2];
    vec3 c = vec3(dot(cross(a1, a2), n), dot(cross(a2, a0), n), dot(cross(a0, a1), n));
    float len = length(c);
    bool collapsed = lbs_collapsed(len, a0, a1, a2);
    skinned_n = collapsed ? normalize(n) : normalize(rotate_vector(q, c / len));
#elif defined(SKIN_LBS)
    mat3x4 m = lbs_blend(BONE(j.x), BONE(j.y), BONE(j.z), BONE(j.w), w);
#ifdef SKIN_INFLUENCES_8
    m += lbs_blend(BONE(j1.x), BONE(j1.y), BONE(j1.z), BONE(j1.w), w1);
#endif
    skinned_p = lbs_transform_point(m, p);
    skinned_n = lbs_transform_normal(m, n);
#else
#ifdef SKIN_DQS_SCALE
    // Phase 1: blended scale/shear in rest space, exactly like LBS of the [S | 0] matrices.
    mat3x4 s = lbs_blend(BONE_SCALE(j.x), BONE_SCALE(j.y), BONE_SCALE(j.z), BONE_SCALE(j.w), w);
#ifdef SKIN_INFLUENCES_8
    s += lbs_blend(BONE_SCALE(j1.x), BONE_SCALE(j1.y), BONE_SCALE(j1.z), BONE_SCALE(j1.w), w1);
#endif
    p = lbs_transform_point(s, p);
    n = lbs_transform_normal(s, n);
#endif
    // Phase 2 (or the whole of plain DQS): blend the rigid parts.
    mat2x4 dq = dq_blend(BONE(j.x), BONE(j.y), BONE(j.z), BONE(j.w), w);
#ifdef SKIN_INFLUENCES_8
    dq += dq_blend_more(BONE(j.x)[0], BONE(j1.x), BONE(j1.y), BONE(j1.z), BONE(j1.w), w1);
#endif
    if (!dq_normalize(dq)) {
        skinned_p = p;
        skinned_n = normalize(n);
        return;
    }
    skinned_p = dq_transform_point(dq, p);
    skinned_n = dq_transform_normal(dq, n);
#endif
}
#endif  // SKIN_DDM
