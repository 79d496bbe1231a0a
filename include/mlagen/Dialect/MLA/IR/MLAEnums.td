//===- MLAEnums.td - enumerations of the mla dialect -------*- tablegen -*-===//
//
// Each enum is wrapped in an EnumAttr whose assembly format is the bare
// case name, so ops print `mask = causal`, not an integer.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLAENUMS_TD
#define MLAGEN_DIALECT_MLA_IR_MLAENUMS_TD

include "mlagen/Dialect/MLA/IR/MLADialect.td"
include "mlir/IR/EnumAttr.td"

def MLA_DType : I32Enum<"DType", "element type of q, k, v or out", [
    I32EnumCase<"BF16", 0, "bf16">,
    I32EnumCase<"F16", 1, "f16">,
    // FNUZ on gfx942, OCP on gfx950 and NVIDIA: the arch decides at emission.
    I32EnumCase<"F8E4M3", 2, "f8E4M3">
  ]> {
  let cppNamespace = "::mlagen::mla";
}

def MLA_Mask : I32Enum<"Mask", "attention mask", [
    I32EnumCase<"None", 0, "none">,
    // Bottom-right aligned, as FlashAttention: query i of sq sees key j of
    // sk iff j <= i + sk - sq.
    I32EnumCase<"Causal", 1, "causal">
  ]> {
  let cppNamespace = "::mlagen::mla";
}

def MLA_KVLayout : I32Enum<"KVLayout", "layout of the key/value cache", [
    // Sequences packed back to back, delimited by cu_seqlens.
    I32EnumCase<"Varlen", 0, "varlen">,
    // Fixed-size pages addressed through a block table.
    I32EnumCase<"Paged", 1, "paged">
  ]> {
  let cppNamespace = "::mlagen::mla";
}

// Spelled as the device compilers spell them (--offload-arch=gfx942,
// --gpu-architecture=sm_90a).
def MLA_Arch : I32Enum<"Arch", "target GPU architecture", [
    I32EnumCase<"GFX90A", 0, "gfx90a">,
    I32EnumCase<"GFX942", 1, "gfx942">,
    I32EnumCase<"GFX950", 2, "gfx950">,
    I32EnumCase<"SM80", 3, "sm_80">,
    I32EnumCase<"SM90A", 4, "sm_90a">
  ]> {
  let cppNamespace = "::mlagen::mla";
}

def MLA_DTypeAttr : EnumAttr<MLA_Dialect, MLA_DType, "dtype">;
def MLA_MaskAttr : EnumAttr<MLA_Dialect, MLA_Mask, "mask">;
def MLA_KVLayoutAttr : EnumAttr<MLA_Dialect, MLA_KVLayout, "kv_layout">;
def MLA_ArchAttr : EnumAttr<MLA_Dialect, MLA_Arch, "arch">;

#endif // MLAGEN_DIALECT_MLA_IR_MLAENUMS_TD
