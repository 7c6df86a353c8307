// Per-instance data of the renderer (set 0, binding 1), shared by skin.vert and skin.frag.
// Written every frame into persistently mapped memory, one block per instance per frame.
layout(std140, set = 0, binding = 1) uniform InstanceBlock {
    mat4 model;          // mesh space -> world space
    mat4 normal_matrix;  // inverse transpose of model's 3x3, as a mat4
    vec4 base_color;     // linear RGB, alpha
    vec4 key_light;      // xyz: direction the key light travels (world space), follows the camera
    vec4 fill_light;     // xyz: direction of the fill light (world space)
    vec4 ambient;        // rgb: ambient light; a: specular strength
    vec4 camera_position;
    ivec4 debug;         // x: 0 shaded, 1 bone-weight heat map, 2 scalar heat map (location 9);
                         // y: bone shown by the heat map
} inst;
