module {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = tosa.abs %arg0 : (tensor<4xf32>) -> tensor<4xf32>
    %1 = tosa.custom %0 {domain_name = "com.arm.VulkanCustomShader", implementation_attrs = "{\22entry_point\22:\22main\22,\22is_vkshader\22:true,\22workgroup_sizes\22:[2,3,4],\22input_0_binding\22:0,\22input_0_descriptorset\22:0,\22input_0_type\22:\22TENSOR\22,\22input_0_vkdescriptortype\22:\22VK_DESCRIPTOR_TYPE_TENSOR_ARM\22,\22input_0_vkformat\22:\22VK_FORMAT_R32_SFLOAT\22,\22output_0_binding\22:1,\22output_0_descriptorset\22:0,\22output_0_type\22:\22TENSOR\22,\22output_0_vkdescriptortype\22:\22VK_DESCRIPTOR_TYPE_TENSOR_ARM\22,\22output_0_vkformat\22:\22VK_FORMAT_R32_SFLOAT\22}", operator_name = "my_shader"} : (tensor<4xf32>) -> tensor<4xf32>
    %2 = tosa.abs %1 : (tensor<4xf32>) -> tensor<4xf32>
    %3 = tosa.abs %arg1 : (tensor<4xf32>) -> tensor<4xf32>
    return %2, %3 : tensor<4xf32>, tensor<4xf32>
  }
}
