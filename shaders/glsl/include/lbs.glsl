// Linear blend skinning math, the comparison method. No #version and no bindings here.
//
// A bone is a mat3x4 whose three columns hold the three ROWS of the 3x4 affine matrix [A | t], so
// that vec4(p, 1.0) * bone == A p + t (12 floats a bone, std140-friendly).

const float LBS_EPS = 1e-6;

mat3x4 lbs_blend(mat3x4 m0, mat3x4 m1, mat3x4 m2, mat3x4 m3, vec4 w) {
    return m0 * w.x + m1 * w.y + m2 * w.z + m3 * w.w;
}

vec3 lbs_transform_point(mat3x4 m, vec3 p) {
    return vec4(p, 1.0) * m;
}

// Normals transform by the inverse transpose of the linear part. Its cofactor matrix
// (det * inverse transpose) points the same way, needs no division, and its rows are cross products
// of the rows of A. Falls back to the rest normal where the blended matrix has collapsed:
// where |cof(A) n| <= LBS_EPS relative to A's scale (cofactors scale with its square, so a rig
// whose matrices carry a tiny scale, as quantized glTF files do, is not mistaken for collapsed).
float lbs_cofactor_eps(vec3 a0, vec3 a1, vec3 a2) {
    return LBS_EPS * (dot(a0, a0) + dot(a1, a1) + dot(a2, a2)) / 3.0;  // LBS_EPS when rigid
}

// "Not longer than the bound", not "shorter": an all-zero blend (all-zero bone matrices) has
// len = 0 = the bound and takes the rest normal too, never 0 / 0.
bool lbs_collapsed(float len, vec3 a0, vec3 a1, vec3 a2) {
    return !(len > lbs_cofactor_eps(a0, a1, a2));
}

vec3 lbs_transform_normal(mat3x4 m, vec3 n) {
    vec3 a0 = m[0].xyz;
    vec3 a1 = m[1].xyz;
    vec3 a2 = m[2].xyz;
    vec3 c = vec3(dot(cross(a1, a2), n), dot(cross(a2, a0), n), dot(cross(a0, a1), n));
    float len = length(c);
    return lbs_collapsed(len, a0, a1, a2) ? normalize(n) : c / len;
}
