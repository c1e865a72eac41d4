"""cffi declarations of VK_ARM_tensors and VK_ARM_data_graph, beside the `vulkan` package.

The `vulkan` PyPI package (1.3.275.1) predates the ARM ML extensions and ships a prebuilt FFI
that takes no new declarations, so the ARM structures, handles and function pointer types live
in a second `cffi.FFI` here, written from the Vulkan registry (vk.xml, `VK_ARM_tensors` spec
version 2, `VK_ARM_data_graph` spec version 1). Structures of this FFI go into `pNext` chains of
the package's structures; handles cross between the two FFIs with `ffi.cast`.

`tests/test_vulkan_ffi.py` checks every structure here member by member against vk.xml.
Importing this module does not load libvulkan.
"""

from __future__ import annotations

import cffi

CDEF = """
typedef uint32_t VkFlags;
typedef uint64_t VkFlags64;
typedef uint32_t VkBool32;
typedef uint64_t VkDeviceSize;
typedef int32_t VkResult;
typedef int32_t VkStructureType;
typedef int32_t VkFormat;
typedef int32_t VkSharingMode;
typedef VkFlags VkShaderStageFlags;
typedef VkFlags64 VkFormatFeatureFlags2;
typedef VkFlags64 VkPipelineStageFlags2;
typedef VkFlags64 VkAccessFlags2;
typedef VkFlags64 VkPipelineCreateFlags2;

typedef struct VkInstance_T* VkInstance;
typedef struct VkPhysicalDevice_T* VkPhysicalDevice;
typedef struct VkDevice_T* VkDevice;
typedef struct VkCommandBuffer_T* VkCommandBuffer;
typedef struct VkDeviceMemory_T* VkDeviceMemory;
typedef struct VkPipeline_T* VkPipeline;
typedef struct VkPipelineLayout_T* VkPipelineLayout;
typedef struct VkPipelineCache_T* VkPipelineCache;
typedef struct VkShaderModule_T* VkShaderModule;
typedef struct VkDeferredOperationKHR_T* VkDeferredOperationKHR;
typedef struct VkAllocationCallbacks VkAllocationCallbacks;
typedef struct VkSpecializationInfo VkSpecializationInfo;

typedef struct VkMemoryRequirements {
    VkDeviceSize size;
    VkDeviceSize alignment;
    uint32_t memoryTypeBits;
} VkMemoryRequirements;

typedef struct VkMemoryRequirements2 {
    VkStructureType sType;
    void* pNext;
    VkMemoryRequirements memoryRequirements;
} VkMemoryRequirements2;

typedef void (*PFN_vkVoidFunction)(void);

/* VK_ARM_tensors */
typedef struct VkTensorARM_T* VkTensorARM;
typedef struct VkTensorViewARM_T* VkTensorViewARM;
typedef VkFlags64 VkTensorCreateFlagsARM;
typedef VkFlags64 VkTensorViewCreateFlagsARM;
typedef VkFlags64 VkTensorUsageFlagsARM;
typedef int32_t VkTensorTilingARM;

typedef struct VkTensorDescriptionARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorTilingARM tiling;
    VkFormat format;
    uint32_t dimensionCount;
    const int64_t* pDimensions;
    const int64_t* pStrides;
    VkTensorUsageFlagsARM usage;
} VkTensorDescriptionARM;

typedef struct VkTensorCreateInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorCreateFlagsARM flags;
    const VkTensorDescriptionARM* pDescription;
    VkSharingMode sharingMode;
    uint32_t queueFamilyIndexCount;
    const uint32_t* pQueueFamilyIndices;
} VkTensorCreateInfoARM;

typedef struct VkTensorViewCreateInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorViewCreateFlagsARM flags;
    VkTensorARM tensor;
    VkFormat format;
} VkTensorViewCreateInfoARM;

typedef struct VkTensorMemoryRequirementsInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorARM tensor;
} VkTensorMemoryRequirementsInfoARM;

typedef struct VkBindTensorMemoryInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorARM tensor;
    VkDeviceMemory memory;
    VkDeviceSize memoryOffset;
} VkBindTensorMemoryInfoARM;

typedef struct VkWriteDescriptorSetTensorARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t tensorViewCount;
    const VkTensorViewARM* pTensorViews;
} VkWriteDescriptorSetTensorARM;

typedef struct VkTensorFormatPropertiesARM {
    VkStructureType sType;
    void* pNext;
    VkFormatFeatureFlags2 optimalTilingTensorFeatures;
    VkFormatFeatureFlags2 linearTilingTensorFeatures;
} VkTensorFormatPropertiesARM;

typedef struct VkPhysicalDeviceTensorPropertiesARM {
    VkStructureType sType;
    void* pNext;
    uint32_t maxTensorDimensionCount;
    uint64_t maxTensorElements;
    uint64_t maxPerDimensionTensorElements;
    int64_t maxTensorStride;
    uint64_t maxTensorSize;
    uint32_t maxTensorShaderAccessArrayLength;
    uint32_t maxTensorShaderAccessSize;
    uint32_t maxDescriptorSetStorageTensors;
    uint32_t maxPerStageDescriptorSetStorageTensors;
    uint32_t maxDescriptorSetUpdateAfterBindStorageTensors;
    uint32_t maxPerStageDescriptorUpdateAfterBindStorageTensors;
    VkBool32 shaderStorageTensorArrayNonUniformIndexingNative;
    VkShaderStageFlags shaderTensorSupportedStages;
} VkPhysicalDeviceTensorPropertiesARM;

typedef struct VkTensorMemoryBarrierARM {
    VkStructureType sType;
    const void* pNext;
    VkPipelineStageFlags2 srcStageMask;
    VkAccessFlags2 srcAccessMask;
    VkPipelineStageFlags2 dstStageMask;
    VkAccessFlags2 dstAccessMask;
    uint32_t srcQueueFamilyIndex;
    uint32_t dstQueueFamilyIndex;
    VkTensorARM tensor;
} VkTensorMemoryBarrierARM;

typedef struct VkTensorDependencyInfoARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t tensorMemoryBarrierCount;
    const VkTensorMemoryBarrierARM* pTensorMemoryBarriers;
} VkTensorDependencyInfoARM;

typedef struct VkPhysicalDeviceTensorFeaturesARM {
    VkStructureType sType;
    void* pNext;
    VkBool32 tensorNonPacked;
    VkBool32 shaderTensorAccess;
    VkBool32 shaderStorageTensorArrayDynamicIndexing;
    VkBool32 shaderStorageTensorArrayNonUniformIndexing;
    VkBool32 descriptorBindingStorageTensorUpdateAfterBind;
    VkBool32 tensors;
} VkPhysicalDeviceTensorFeaturesARM;

typedef struct VkTensorCopyARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t dimensionCount;
    const uint64_t* pSrcOffset;
    const uint64_t* pDstOffset;
    const uint64_t* pExtent;
} VkTensorCopyARM;

typedef struct VkDeviceTensorMemoryRequirementsARM {
    VkStructureType sType;
    const void* pNext;
    const VkTensorCreateInfoARM* pCreateInfo;
} VkDeviceTensorMemoryRequirementsARM;

typedef struct VkCopyTensorInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkTensorARM srcTensor;
    VkTensorARM dstTensor;
    uint32_t regionCount;
    const VkTensorCopyARM* pRegions;
} VkCopyTensorInfoARM;

typedef VkResult (*PFN_vkCreateTensorARM)(VkDevice, const VkTensorCreateInfoARM*,
    const VkAllocationCallbacks*, VkTensorARM*);
typedef void (*PFN_vkDestroyTensorARM)(VkDevice, VkTensorARM, const VkAllocationCallbacks*);
typedef VkResult (*PFN_vkCreateTensorViewARM)(VkDevice, const VkTensorViewCreateInfoARM*,
    const VkAllocationCallbacks*, VkTensorViewARM*);
typedef void (*PFN_vkDestroyTensorViewARM)(VkDevice, VkTensorViewARM,
    const VkAllocationCallbacks*);
typedef void (*PFN_vkGetTensorMemoryRequirementsARM)(VkDevice,
    const VkTensorMemoryRequirementsInfoARM*, VkMemoryRequirements2*);
typedef VkResult (*PFN_vkBindTensorMemoryARM)(VkDevice, uint32_t,
    const VkBindTensorMemoryInfoARM*);
typedef void (*PFN_vkGetDeviceTensorMemoryRequirementsARM)(VkDevice,
    const VkDeviceTensorMemoryRequirementsARM*, VkMemoryRequirements2*);
typedef void (*PFN_vkCmdCopyTensorARM)(VkCommandBuffer, const VkCopyTensorInfoARM*);

/* VK_ARM_data_graph */
typedef struct VkDataGraphPipelineSessionARM_T* VkDataGraphPipelineSessionARM;
typedef int32_t VkDataGraphPipelineSessionBindPointARM;
typedef int32_t VkDataGraphPipelineSessionBindPointTypeARM;
typedef VkFlags64 VkDataGraphPipelineSessionCreateFlagsARM;
typedef VkFlags64 VkDataGraphPipelineDispatchFlagsARM;
typedef int32_t VkPhysicalDeviceDataGraphProcessingEngineTypeARM;
typedef int32_t VkPhysicalDeviceDataGraphOperationTypeARM;

typedef struct VkPhysicalDeviceDataGraphFeaturesARM {
    VkStructureType sType;
    void* pNext;
    VkBool32 dataGraph;
    VkBool32 dataGraphUpdateAfterBind;
    VkBool32 dataGraphSpecializationConstants;
    VkBool32 dataGraphDescriptorBuffer;
    VkBool32 dataGraphShaderModule;
} VkPhysicalDeviceDataGraphFeaturesARM;

typedef struct VkDataGraphPipelineConstantARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t id;
    const void* pConstantData;
} VkDataGraphPipelineConstantARM;

typedef struct VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t dimension;
    uint32_t zeroCount;
    uint32_t groupSize;
} VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM;

typedef struct VkDataGraphPipelineResourceInfoARM {
    VkStructureType sType;
    const void* pNext;
    uint32_t descriptorSet;
    uint32_t binding;
    uint32_t arrayElement;
} VkDataGraphPipelineResourceInfoARM;

typedef struct VkDataGraphPipelineCreateInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkPipelineCreateFlags2 flags;
    VkPipelineLayout layout;
    uint32_t resourceInfoCount;
    const VkDataGraphPipelineResourceInfoARM* pResourceInfos;
} VkDataGraphPipelineCreateInfoARM;

typedef struct VkDataGraphPipelineShaderModuleCreateInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkShaderModule module;
    const char* pName;
    const VkSpecializationInfo* pSpecializationInfo;
    uint32_t constantCount;
    const VkDataGraphPipelineConstantARM* pConstants;
} VkDataGraphPipelineShaderModuleCreateInfoARM;

typedef struct VkDataGraphPipelineSessionCreateInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkDataGraphPipelineSessionCreateFlagsARM flags;
    VkPipeline dataGraphPipeline;
} VkDataGraphPipelineSessionCreateInfoARM;

typedef struct VkDataGraphPipelineSessionBindPointRequirementsInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkDataGraphPipelineSessionARM session;
} VkDataGraphPipelineSessionBindPointRequirementsInfoARM;

typedef struct VkDataGraphPipelineSessionBindPointRequirementARM {
    VkStructureType sType;
    void* pNext;
    VkDataGraphPipelineSessionBindPointARM bindPoint;
    VkDataGraphPipelineSessionBindPointTypeARM bindPointType;
    uint32_t numObjects;
} VkDataGraphPipelineSessionBindPointRequirementARM;

typedef struct VkDataGraphPipelineSessionMemoryRequirementsInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkDataGraphPipelineSessionARM session;
    VkDataGraphPipelineSessionBindPointARM bindPoint;
    uint32_t objectIndex;
} VkDataGraphPipelineSessionMemoryRequirementsInfoARM;

typedef struct VkBindDataGraphPipelineSessionMemoryInfoARM {
    VkStructureType sType;
    const void* pNext;
    VkDataGraphPipelineSessionARM session;
    VkDataGraphPipelineSessionBindPointARM bindPoint;
    uint32_t objectIndex;
    VkDeviceMemory memory;
    VkDeviceSize memoryOffset;
} VkBindDataGraphPipelineSessionMemoryInfoARM;

typedef struct VkDataGraphPipelineDispatchInfoARM {
    VkStructureType sType;
    void* pNext;
    VkDataGraphPipelineDispatchFlagsARM flags;
} VkDataGraphPipelineDispatchInfoARM;

typedef struct VkPhysicalDeviceDataGraphProcessingEngineARM {
    VkPhysicalDeviceDataGraphProcessingEngineTypeARM type;
    VkBool32 isForeign;
} VkPhysicalDeviceDataGraphProcessingEngineARM;

typedef struct VkPhysicalDeviceDataGraphOperationSupportARM {
    VkPhysicalDeviceDataGraphOperationTypeARM operationType;
    char name[128];
    uint32_t version;
} VkPhysicalDeviceDataGraphOperationSupportARM;

typedef struct VkQueueFamilyDataGraphPropertiesARM {
    VkStructureType sType;
    void* pNext;
    VkPhysicalDeviceDataGraphProcessingEngineARM engine;
    VkPhysicalDeviceDataGraphOperationSupportARM operation;
} VkQueueFamilyDataGraphPropertiesARM;

typedef VkResult (*PFN_vkCreateDataGraphPipelinesARM)(VkDevice, VkDeferredOperationKHR,
    VkPipelineCache, uint32_t, const VkDataGraphPipelineCreateInfoARM*,
    const VkAllocationCallbacks*, VkPipeline*);
typedef VkResult (*PFN_vkCreateDataGraphPipelineSessionARM)(VkDevice,
    const VkDataGraphPipelineSessionCreateInfoARM*, const VkAllocationCallbacks*,
    VkDataGraphPipelineSessionARM*);
typedef VkResult (*PFN_vkGetDataGraphPipelineSessionBindPointRequirementsARM)(VkDevice,
    const VkDataGraphPipelineSessionBindPointRequirementsInfoARM*, uint32_t*,
    VkDataGraphPipelineSessionBindPointRequirementARM*);
typedef void (*PFN_vkGetDataGraphPipelineSessionMemoryRequirementsARM)(VkDevice,
    const VkDataGraphPipelineSessionMemoryRequirementsInfoARM*, VkMemoryRequirements2*);
typedef VkResult (*PFN_vkBindDataGraphPipelineSessionMemoryARM)(VkDevice, uint32_t,
    const VkBindDataGraphPipelineSessionMemoryInfoARM*);
typedef void (*PFN_vkDestroyDataGraphPipelineSessionARM)(VkDevice,
    VkDataGraphPipelineSessionARM, const VkAllocationCallbacks*);
typedef void (*PFN_vkCmdDispatchDataGraphARM)(VkCommandBuffer, VkDataGraphPipelineSessionARM,
    const VkDataGraphPipelineDispatchInfoARM*);
typedef VkResult (*PFN_vkGetPhysicalDeviceQueueFamilyDataGraphPropertiesARM)(VkPhysicalDevice,
    uint32_t, uint32_t*, VkQueueFamilyDataGraphPropertiesARM*);

/* VK_EXT_shader_replicated_composites */
typedef struct VkPhysicalDeviceShaderReplicatedCompositesFeaturesEXT {
    VkStructureType sType;
    void* pNext;
    VkBool32 shaderReplicatedComposites;
} VkPhysicalDeviceShaderReplicatedCompositesFeaturesEXT;
"""

ffi = cffi.FFI()
ffi.cdef(CDEF)

DEVICE_FUNCTIONS = (
    "vkCreateTensorARM",
    "vkDestroyTensorARM",
    "vkCreateTensorViewARM",
    "vkDestroyTensorViewARM",
    "vkGetTensorMemoryRequirementsARM",
    "vkBindTensorMemoryARM",
    "vkGetDeviceTensorMemoryRequirementsARM",
    "vkCmdCopyTensorARM",
    "vkCreateDataGraphPipelinesARM",
    "vkCreateDataGraphPipelineSessionARM",
    "vkGetDataGraphPipelineSessionBindPointRequirementsARM",
    "vkGetDataGraphPipelineSessionMemoryRequirementsARM",
    "vkBindDataGraphPipelineSessionMemoryARM",
    "vkDestroyDataGraphPipelineSessionARM",
    "vkCmdDispatchDataGraphARM",
)
"""The ARM device-level commands pyvgf calls, loaded with vkGetDeviceProcAddr."""

INSTANCE_FUNCTIONS = ("vkGetPhysicalDeviceQueueFamilyDataGraphPropertiesARM",)
"""The ARM instance-level commands pyvgf calls, loaded with vkGetInstanceProcAddr."""

# VkStructureType (vk.xml: extension number 461 -> 1000460xxx, 508 -> 1000507xxx)
STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM = 1000460000
STRUCTURE_TYPE_TENSOR_VIEW_CREATE_INFO_ARM = 1000460001
STRUCTURE_TYPE_BIND_TENSOR_MEMORY_INFO_ARM = 1000460002
STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_TENSOR_ARM = 1000460003
STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_PROPERTIES_ARM = 1000460004
STRUCTURE_TYPE_TENSOR_FORMAT_PROPERTIES_ARM = 1000460005
STRUCTURE_TYPE_TENSOR_DESCRIPTION_ARM = 1000460006
STRUCTURE_TYPE_TENSOR_MEMORY_REQUIREMENTS_INFO_ARM = 1000460007
STRUCTURE_TYPE_TENSOR_MEMORY_BARRIER_ARM = 1000460008
STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_FEATURES_ARM = 1000460009
STRUCTURE_TYPE_DEVICE_TENSOR_MEMORY_REQUIREMENTS_ARM = 1000460010
STRUCTURE_TYPE_COPY_TENSOR_INFO_ARM = 1000460011
STRUCTURE_TYPE_TENSOR_COPY_ARM = 1000460012
STRUCTURE_TYPE_TENSOR_DEPENDENCY_INFO_ARM = 1000460013
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM = 1000507000
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_CREATE_INFO_ARM = 1000507001
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_RESOURCE_INFO_ARM = 1000507002
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_ARM = 1000507003
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_MEMORY_REQUIREMENTS_INFO_ARM = 1000507004
STRUCTURE_TYPE_BIND_DATA_GRAPH_PIPELINE_SESSION_MEMORY_INFO_ARM = 1000507005
STRUCTURE_TYPE_PHYSICAL_DEVICE_DATA_GRAPH_FEATURES_ARM = 1000507006
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM = 1000507007
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENTS_INFO_ARM = 1000507011
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENT_ARM = 1000507012
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_DISPATCH_INFO_ARM = 1000507014
STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_TENSOR_SEMI_STRUCTURED_SPARSITY_INFO_ARM = 1000507015
STRUCTURE_TYPE_QUEUE_FAMILY_DATA_GRAPH_PROPERTIES_ARM = 1000507018
STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_REPLICATED_COMPOSITES_FEATURES_EXT = 1000564000
STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2 = 1000146003

# Other enums
DESCRIPTOR_TYPE_TENSOR_ARM = 1000460000
PIPELINE_BIND_POINT_DATA_GRAPH_ARM = 1000507000
TENSOR_TILING_OPTIMAL_ARM = 0
TENSOR_TILING_LINEAR_ARM = 1
TENSOR_USAGE_SHADER_BIT_ARM = 0x2
TENSOR_USAGE_TRANSFER_SRC_BIT_ARM = 0x4
TENSOR_USAGE_TRANSFER_DST_BIT_ARM = 0x8
TENSOR_USAGE_IMAGE_ALIASING_BIT_ARM = 0x10
TENSOR_USAGE_DATA_GRAPH_BIT_ARM = 0x20
QUEUE_DATA_GRAPH_BIT_ARM = 0x400
PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM = 1 << 42
ACCESS_2_DATA_GRAPH_READ_BIT_ARM = 1 << 47
ACCESS_2_DATA_GRAPH_WRITE_BIT_ARM = 1 << 48
DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_TYPE_MEMORY_ARM = 0

EXT_TENSORS = "VK_ARM_tensors"
EXT_DATA_GRAPH = "VK_ARM_data_graph"
EXT_REPLICATED_COMPOSITES = "VK_EXT_shader_replicated_composites"
