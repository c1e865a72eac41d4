module {
  func.func @main(%arg0: tensor<2x16xf32>, %arg1: tensor<2x16xi32>) -> (tensor<2x16xf32>, tensor<2x16xi32>) {
    %c0 = "tosa.const"() <{values = dense<1.5> : tensor<2x16xf32>}> : () -> tensor<2x16xf32>
    %c1 = "tosa.const"() <{values = dense<7> : tensor<2x16xi32>}> : () -> tensor<2x16xi32>
    %c2 = "tosa.const"() <{values = dense<-2.0> : tensor<2x16xf32>}> : () -> tensor<2x16xf32>
    %0 = tosa.add %arg0, %c0 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    %1 = tosa.custom %0 {domain_name = "com.arm.VulkanCustomShader", implementation_attrs = "{\"entry_point\":\"main\",\"is_vkshader\":true,\"workgroup_sizes\":[4,1,1],\"shader_language\":\"GLSL\",\"shader_code\":\"void main() { }\",\"input_0_binding\":0,\"input_0_descriptorset\":0,\"input_0_type\":\"TENSOR\",\"input_0_vkdescriptortype\":\"VK_DESCRIPTOR_TYPE_TENSOR_ARM\",\"input_0_vkformat\":\"VK_FORMAT_R32_SFLOAT\",\"output_0_binding\":1,\"output_0_descriptorset\":0,\"output_0_type\":\"TENSOR\",\"output_0_vkdescriptortype\":\"VK_DESCRIPTOR_TYPE_TENSOR_ARM\",\"output_0_vkformat\":\"VK_FORMAT_R32_SFLOAT\"}", operator_name = "noop"} : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %2 = tosa.add %1, %c2 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    %3 = tosa.add %arg1, %c1 : (tensor<2x16xi32>, tensor<2x16xi32>) -> tensor<2x16xi32>
    return %2, %3 : tensor<2x16xf32>, tensor<2x16xi32>
  }
}
