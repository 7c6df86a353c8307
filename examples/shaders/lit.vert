#version 450
// The example app's own vertex shader (examples/embed_compute.py): it draws the vertices
// vkdqs skinned into the app's buffers, tightly packed vec3 positions and normals.
layout(location = 0) in vec3 position;
layout(location = 1) in vec3 normal;
layout(push_constant) uniform Push { mat4 view_projection; } pc;
layout(location = 0) out vec3 world_normal;

void main() {
    world_normal = normal;
    gl_Position = pc.view_projection * vec4(position, 1.0);
}
