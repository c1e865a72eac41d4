// graph (add a constant) -> compute (a custom shader whose SPIR-V is a bare 5-word header, run
// by a registered Python stand-in in the tests) -> graph (subtract another constant and an input).
module {
  func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %c1 = "tosa.const"() <{values = dense<[[0.61, 0.616, 0.031, -0.428, -0.892, -0.233, -0.183, -0.909], [-0.902, 0.998, 0.305, -0.531, -0.13, 0.948, 0.795, 0.688], [-0.215, -0.014, 0.353, -0.878, 0.111, -0.457, 0.759, -0.872], [0.358, 0.74, -0.545, 0.791, 0.744, -0.963, 0.415, -0.998]]> : tensor<4x8xf32>}> : () -> tensor<4x8xf32>
    %c2 = "tosa.const"() <{values = dense<[[0.007, -0.127, -0.593, -0.35, 0.612, -0.367, -0.702, 0.397], [-0.103, 0.598, -0.529, -0.36, 0.6, 0.014, 0.013, -0.528], [-0.971, 0.866, -0.828, 0.69, -0.264, 0.902, -0.201, 0.873], [0.112, -0.52, 0.483, 0.349, 0.368, -0.072, -0.556, 0.282]]> : tensor<4x8xf32>}> : () -> tensor<4x8xf32>
    %0 = tosa.add %a, %c1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = tosa.custom %0 {domain_name = "com.arm.VulkanCustomShader", implementation_attrs = "{\22entry_point\22:\22main\22,\22is_vkshader\22:true,\22workgroup_sizes\22:[4,1,1],\22shader_language\22:\22SPIR-V\22,\22shader_code\22:\22AwIjBwAAAQAAAAAAAQAAAAAAAAA=\22,\22input_0_binding\22:0,\22input_0_descriptorset\22:0,\22input_0_type\22:\22TENSOR\22,\22input_0_vkdescriptortype\22:\22VK_DESCRIPTOR_TYPE_STORAGE_BUFFER\22,\22input_0_vkformat\22:\22VK_FORMAT_R32_SFLOAT\22,\22output_0_binding\22:1,\22output_0_descriptorset\22:0,\22output_0_type\22:\22TENSOR\22,\22output_0_vkdescriptortype\22:\22VK_DESCRIPTOR_TYPE_STORAGE_BUFFER\22,\22output_0_vkformat\22:\22VK_FORMAT_R32_SFLOAT\22}", operator_name = "double_it"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = tosa.sub %1, %c2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = tosa.sub %2, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return %3 : tensor<4x8xf32>
  }
}
