// Direct Delta Mush's per-vertex inputs: the one place that declares them and addresses a
// vertex's texels, included under SKIN_DDM by skin.comp, skin.vert and crowd.vert (after
// include/skin.glsl, which brings ddm.glsl's ddm_skin_vertex and DDM_OMEGA_TEXELS). A change of
// the texel layout is an edit here and in vkdqs.shader_interface.ddm_arrays.
//   binding 13  each vertex's Omega: DDM_OMEGA_TEXELS rgba32f texels a vertex ("ddm_omega")
//   binding 14  each vertex's slots' bones: one rgba32i texel a vertex, 8 x 16 bits; one more
//               texel after the last vertex's holds the rest mesh's squared bounding-box
//               diagonal (float bits in x), the scale of the degenerate test ("ddm_bones")
layout(set = 0, binding = 13) uniform samplerBuffer in_ddm_omega;
layout(set = 0, binding = 14) uniform isamplerBuffer in_ddm_bones;

// The rest mesh's squared bounding-box diagonal, for the shaders without a push constant of it.
float ddm_mesh_diag2() {
    return intBitsToFloat(texelFetch(in_ddm_bones, textureSize(in_ddm_bones) - 1).x);
}

// Skins vertex v (rest position o, displaced by d: a morph delta; normal n) with its Omega and
// bones: ddm_skin_vertex() of include/ddm.glsl.
void ddm_skin_input(int v, vec3 o, vec3 d, vec3 n, float diag2, out vec3 skinned_p,
                    out vec3 skinned_n) {
    ddm_skin_vertex(in_ddm_omega, v * DDM_OMEGA_TEXELS, texelFetch(in_ddm_bones, v), o, d, n,
                    diag2, skinned_p, skinned_n);
}
