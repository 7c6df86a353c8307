// Direct Delta Mush (variant 0) at run time: vkdqs/ddm.py's skin_reference in float32, the
// block of method "ddm" (skin.glsl includes it under SKIN_DDM; skin.comp fetches each vertex's
// texels and calls ddm_skin_vertex). No #version and no bindings here; needs lbs.glsl (the
// cofactor normal of the fallback) and BONE(i), each bone's matrix rows (SKIN_BONES_ROWS).

// Slots a vertex carries (vkdqs.shader_interface.ddm_slots: 4 where the precomputation keeps
// at most 4 bones a vertex) and the texels of their Omega.
#ifdef SKIN_INFLUENCES_8
const int DDM_SLOTS = 8;
#else
const int DDM_SLOTS = 4;
#endif
const int DDM_OMEGA_TEXELS = DDM_SLOTS * 10 / 4;
// The bone of a pair's first slot where it and every later slot are absent (zero Omega;
// vkdqs.shader_interface.DDM_ABSENT): a vertex is skinned with the pairs before it only.
const uint DDM_ABSENT = 0xffffu;

// |Q - q p^T|_F <= DDM_DEGENERATE_EPS * d^2 (d the rest mesh's bounding-box diagonal): the
// covariance vanished (no smoothing): positions need no fallback, normals take LBS's
// (ddm.DEGENERATE_EPS_FLOAT32).
const float DDM_DEGENERATE_EPS = 1e-5;

// One Jacobi rotation of a symmetric 3x3 zeroing a_pq (a_pp, a_qq, a_pq; a_kp, a_kq with k the
// third index), accumulated into the eigenvector columns vp, vq (Numerical Recipes' jacobi).
void ddm_jacobi(inout float app, inout float aqq, inout float apq, inout float akp,
                inout float akq, inout vec3 vp, inout vec3 vq) {
    if (abs(apq) <= 1e-30) {
        return;
    }
    float theta = (aqq - app) / (2.0 * apq);
    float t = theta == 0.0 ? 1.0 : sign(theta) / (abs(theta) + sqrt(theta * theta + 1.0));
    float c = inversesqrt(t * t + 1.0);
    float s = t * c;
    app -= t * apq;
    aqq += t * apq;
    apq = 0.0;
    float kp = akp;
    akp = c * kp - s * akq;
    akq = s * kp + c * akq;
    vec3 p = vp;
    vp = c * p - s * vq;
    vq = s * p + c * vq;
}

// The rotation nearest to c (max trace(R^T c) over proper rotations: the polar rotation, with
// the SVD's last axis flipped where det c < 0), from the eigenvectors of c^T c (3 cyclic Jacobi
// sweeps): the two largest give u_k = c v_k / |c v_k|, the third axis of each frame is the cross
// product of the first two. Returns false where c has rank below 2 (R is not determined).
bool ddm_polar(mat3 c, out mat3 r) {
    mat3 g = transpose(c) * c;
    float a00 = g[0][0];
    float a11 = g[1][1];
    float a22 = g[2][2];
    float a01 = g[1][0];
    float a02 = g[2][0];
    float a12 = g[2][1];
    vec3 v0 = vec3(1.0, 0.0, 0.0);
    vec3 v1 = vec3(0.0, 1.0, 0.0);
    vec3 v2 = vec3(0.0, 0.0, 1.0);
    for (int sweep = 0; sweep < 3; ++sweep) {
        ddm_jacobi(a00, a11, a01, a02, a12, v0, v1);
        ddm_jacobi(a00, a22, a02, a01, a12, v0, v2);
        ddm_jacobi(a11, a22, a12, a01, a02, v1, v2);
    }
    // the two largest eigenvalues' vectors
    vec3 v1st = v0;
    vec3 v2nd = v1;
    if (a11 > a00) {
        v1st = v1;
        v2nd = v0;
    }
    float big = max(a00, a11);
    float second = min(a00, a11);
    if (a22 > big) {
        v2nd = v1st;
        v1st = v2;
    } else if (a22 > second) {
        v2nd = v2;
    }
    vec3 u1 = c * v1st;
    vec3 u2 = c * v2nd;
    float l1 = length(u1);
    u1 /= l1;
    u2 -= dot(u2, u1) * u1;
    float l2 = length(u2);
    if (!(l2 > 1e-6 * l1)) {
        r = mat3(1.0);
        return false;
    }
    u2 /= l2;
    r = mat3(u1, u2, cross(u1, u2)) * transpose(mat3(v1st, v2nd, cross(v1st, v2nd)));
    return true;
}

// Accumulates one kept bone: q_rows += M' Omega (3 rows of the 4x4 product), bottom += Omega's
// last row. m holds M's rows (lbs.glsl's layout); r0..r3 the rows of the symmetric Omega's upper
// triangle (00 01 02 03, 11 12 13, 22 23, 33).
void ddm_add(mat3x4 m, vec4 r0, vec3 r1, vec2 r2, float r3, inout mat4 q) {
    // symmetric: its columns are its rows
    mat4 om = mat4(r0, vec4(r0.y, r1), vec4(r0.z, r1.y, r2), vec4(r0.w, r1.z, r2.y, r3));
    // q[c] is column c of the product; rows 0..2 from M's rows, row 3 from Omega's last row
    for (int c = 0; c < 4; ++c) {
        q[c] += vec4(dot(m[0], om[c]), dot(m[1], om[c]), dot(m[2], om[c]), om[c][3]);
    }
}

// The posed position and normal of a vertex at p (rest, in Omega's frame, whose origin is o) with
// normal n, from the accumulated q (columns); diag2: d^2 of the degenerate test; scale: the
// pose's uniform scale s (1 for rigid bones). With every bone s [R_j | t_j], q's covariance is s
// times the rigid pose's (the same rotation) and q's translation s times its; only the offset
// p - p_t is then scaled here, so the result is s times the rigid pose's (vkdqs.ddm's
// skin_reference). A vertex with no weight keeps its rest position o + p and its normal.
// Returns true where the covariance vanished: the caller then sets the normal to LBS's
// (skinned_n is left unset).
bool ddm_finish(mat4 q, vec3 o, vec3 p, vec3 n, float diag2, float scale, out vec3 skinned_p,
                out vec3 skinned_n) {
    float w = q[3][3];
    if (!(w > 0.0)) {
        skinned_p = o + p;
        skinned_n = normalize(n);
        return false;
    }
    q /= w;
    mat3 q_bar = mat3(q[0].xyz, q[1].xyz, q[2].xyz);
    vec3 qt = q[3].xyz;
    vec3 pt = vec3(q[0][3], q[1][3], q[2][3]);
    mat3 cov = q_bar - outerProduct(qt, pt);
    mat3 r;
    bool ok = ddm_polar(cov, r);
    skinned_p = scale * (r * (p - pt)) + qt;
    float size = sqrt(dot(cov[0], cov[0]) + dot(cov[1], cov[1]) + dot(cov[2], cov[2]));
    skinned_n = normalize(r * n);
    return !(ok && size > DDM_DEGENERATE_EPS * diag2 * scale);
}

// A bone's matrix m (rows, lbs.glsl's layout) times T(o): its translation becomes m o, since
// Omega is about the vertex's rest position o.
mat3x4 ddm_about(mat3x4 m, vec4 rest) {
    m[0].w = dot(m[0], rest);
    m[1].w = dot(m[1], rest);
    m[2].w = dot(m[2], rest);
    return m;
}

// Skins one vertex: its slots' Omega (10 values a slot, about its rest position o) at texels
// first .. first + DDM_OMEGA_TEXELS of omega, two slots in five texels; slot_bones its slots'
// bones (16 bits each, slot 2k in lane k's low half; DDM_ABSENT from the first absent pair
// on, where the loop stops: a saving where a SIMD group's lanes all stop, on devices that
// branch; lavapipe predicates the unrolled loop and reads every pair); d its displacement
// from o (a morph target's delta; zero without), n its normal; diag2 as ddm_finish.
// Each bone is read once: the same rows also go into the bones blended by the smoothed weights
// (Omega[3][3]), whose normal is taken where the covariance vanished. Reading them again
// inside that branch cost lavapipe, which runs both sides of a branch, a fifth of the dispatch.
// The pose's uniform scale (1 for rigid bones; vkdqs.bones.pack_uniformly_scaled allows one
// that every bone shares) is the length of a row of the first slot's bone.
void ddm_skin_vertex(samplerBuffer omega, int first, ivec4 slot_bones, vec3 o, vec3 d, vec3 n,
                     float diag2, out vec3 skinned_p, out vec3 skinned_n) {
    vec4 rest = vec4(o, 1.0);
    mat4 q = mat4(0.0);
    mat3x4 lin = mat3x4(0.0);
    float scale = 1.0;
    for (int k = 0; k < DDM_SLOTS / 2; ++k) {
        uint pair = uint(slot_bones[k]);
        if ((pair & 0xffffu) == DDM_ABSENT) {
            break;
        }
        int t = first + 5 * k;
        vec4 t0 = texelFetch(omega, t);
        vec4 t1 = texelFetch(omega, t + 1);
        vec4 t2 = texelFetch(omega, t + 2);
        vec4 t3 = texelFetch(omega, t + 3);
        vec4 t4 = texelFetch(omega, t + 4);
        mat3x4 m0 = BONE(int(pair & 0xffffu));
        mat3x4 m1 = BONE(int(pair >> 16));
        if (k == 0) {
            scale = length(m0[0].xyz);
        }
        lin += m0 * t2.y + m1 * t4.w;
        ddm_add(ddm_about(m0, rest), t0, t1.xyz, vec2(t1.w, t2.x), t2.y, q);
        ddm_add(ddm_about(m1, rest), vec4(t2.zw, t3.xy), vec3(t3.zw, t4.x), t4.yz, t4.w, q);
    }
    if (ddm_finish(q, o, d, n, diag2, scale, skinned_p, skinned_n)) {
        skinned_n = lbs_transform_normal(lin, n);  // LBS's normal of the smoothed weights
    }
}
