//! PyTorch's memory-relevant objects: tensors, the storages that own their bytes, dtypes,
//! devices and shape rules. Values are never computed; shapes, dtypes, devices and storage
//! sharing are, because memory depends on nothing else.
//!
//! GPU bytes belong to a storage. A tensor object refers to one storage; views and
//! `detach()` share it; the storage's bytes go back to the allocator when the last tensor
//! object on it dies. A view also holds its base tensor object alive through C++ (`_base`),
//! a reference the cycle collector cannot see: the base is a root while the view lives.

mod autograd;
mod shape;
mod storage;

pub use autograd::{
    Category, GradFlow, GradNode, HAND_WRITTEN_NODES, InputEdge, ModuleHookSide, OP_RULES, OpRule,
    Save, Saved, is_known_node, op_rule,
};

pub use shape::{broadcast, mat_mismatch, matmul_shape, numel, reshape_shape, storage_nbytes};
pub use storage::{Storage, StorageId, Storages};

use crate::heap::{Edge, ObjId, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    Float32,
    Float16,
    BFloat16,
    Float64,
    Int64,
    Int32,
    Int16,
    Int8,
    UInt8,
    Bool,
}

impl Dtype {
    pub fn element_size(self) -> u64 {
        match self {
            Dtype::Float64 | Dtype::Int64 => 8,
            Dtype::Float32 | Dtype::Int32 => 4,
            Dtype::Float16 | Dtype::BFloat16 | Dtype::Int16 => 2,
            Dtype::Int8 | Dtype::UInt8 | Dtype::Bool => 1,
        }
    }

    /// The name after `torch.` (`float32`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Float32 => "float32",
            Dtype::Float16 => "float16",
            Dtype::BFloat16 => "bfloat16",
            Dtype::Float64 => "float64",
            Dtype::Int64 => "int64",
            Dtype::Int32 => "int32",
            Dtype::Int16 => "int16",
            Dtype::Int8 => "int8",
            Dtype::UInt8 => "uint8",
            Dtype::Bool => "bool",
        }
    }

    /// `torch.<name>`, including the aliases torch defines (`float`, `half`, `long`, ...).
    pub fn from_name(name: &str) -> Option<Dtype> {
        Some(match name {
            "float32" | "float" => Dtype::Float32,
            "float16" | "half" => Dtype::Float16,
            "bfloat16" => Dtype::BFloat16,
            "float64" | "double" => Dtype::Float64,
            "int64" | "long" => Dtype::Int64,
            "int32" | "int" => Dtype::Int32,
            "int16" | "short" => Dtype::Int16,
            "int8" => Dtype::Int8,
            "uint8" => Dtype::UInt8,
            "bool" => Dtype::Bool,
            _ => return None,
        })
    }

    pub fn is_floating(self) -> bool {
        matches!(
            self,
            Dtype::Float32 | Dtype::Float16 | Dtype::BFloat16 | Dtype::Float64
        )
    }

    /// Type promotion between two tensors of the same category, as PyTorch's table
    /// (`c10/core/ScalarType.h`, `promoteTypes`) gives it: `bool` yields to anything, an
    /// integral type to any floating one, otherwise the wider type wins; the two pairs with
    /// no wider member of their own kind promote to the next type that holds both
    /// (`uint8`+`int8` to `int16`, `float16`+`bfloat16` to `float32`).
    pub fn promote(a: Dtype, b: Dtype) -> Dtype {
        use Dtype::*;
        match (a, b) {
            _ if a == b => a,
            (Bool, other) | (other, Bool) => other,
            (UInt8, Int8) | (Int8, UInt8) => Int16,
            (Float16, BFloat16) | (BFloat16, Float16) => Float32,
            _ => match (a.is_floating(), b.is_floating()) {
                (true, false) => a,
                (false, true) => b,
                _ if a.element_size() >= b.element_size() => a,
                _ => b,
            },
        }
    }
}

#[cfg(test)]
mod promotion_tests {
    use super::Dtype::{self, *};

    /// PyTorch's `promoteTypes` table restricted to the dtypes the model has, transcribed
    /// from `c10/core/ScalarType.h` (rows and columns in this order).
    const ORDER: [Dtype; 10] = [
        UInt8, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Bool, BFloat16,
    ];
    #[rustfmt::skip]
    const TABLE: [[Dtype; 10]; 10] = [
        // u1      i1     i2     i4     i8     f2       f4       f8       b1       bf
        [UInt8, Int16, Int16, Int32, Int64, Float16, Float32, Float64, UInt8, BFloat16],
        [Int16, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Int8, BFloat16],
        [Int16, Int16, Int16, Int32, Int64, Float16, Float32, Float64, Int16, BFloat16],
        [Int32, Int32, Int32, Int32, Int64, Float16, Float32, Float64, Int32, BFloat16],
        [Int64, Int64, Int64, Int64, Int64, Float16, Float32, Float64, Int64, BFloat16],
        [Float16, Float16, Float16, Float16, Float16, Float16, Float32, Float64, Float16, Float32],
        [Float32, Float32, Float32, Float32, Float32, Float32, Float32, Float64, Float32, Float32],
        [Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64, Float64],
        [UInt8, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Bool, BFloat16],
        [BFloat16, BFloat16, BFloat16, BFloat16, BFloat16, Float32, Float32, Float64, BFloat16, BFloat16],
    ];

    #[test]
    fn promote_follows_pytorchs_table_for_every_pair() {
        for (i, &a) in ORDER.iter().enumerate() {
            for (j, &b) in ORDER.iter().enumerate() {
                assert_eq!(
                    Dtype::promote(a, b),
                    TABLE[i][j],
                    "promote({}, {})",
                    a.name(),
                    b.name()
                );
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cpu,
    /// The scenario's one GPU (`cuda`, `cuda:0`).
    Cuda,
}

impl DeviceKind {
    /// Parses `"cuda"`, `"cuda:0"`, `"cpu"`. Other devices or indices are not modelled.
    pub fn parse(text: &str) -> Option<DeviceKind> {
        match text {
            "cpu" => Some(DeviceKind::Cpu),
            "cuda" | "cuda:0" => Some(DeviceKind::Cuda),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda:0",
        }
    }
}

/// The Python-visible part of a tensor.
#[derive(Debug, Clone)]
pub struct TensorData {
    pub storage: StorageId,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
    /// The base of a view (`_base`), held through C++: invisible to the collector.
    pub base: Option<ObjId>,
    pub requires_grad: bool,
    /// The autograd node that produced it (a C++ reference).
    pub grad_fn: Option<ObjId>,
    /// Which output of `grad_fn` it is (PyTorch's `output_nr`); 0 for one-output nodes.
    pub output_nr: u32,
    /// `.grad`, held by the C++ autograd metadata.
    pub grad: Option<ObjId>,
    /// An `nn.Parameter`.
    pub is_param: bool,
    /// Row-major without gaps or repeats. Transposes, permutes and expands are not, and
    /// `contiguous()` or `reshape` of them copy.
    pub contiguous: bool,
    /// `_backward_hooks`, the dict `register_hook` fills. The tensor object holds it twice:
    /// once as a Python attribute (`THPVariable.backward_hooks`, visited by
    /// `tp_traverse`, dropped by `tp_clear`) and once through the C++ tensor pre-hook its
    /// setter installs (`PyFunctionTensorPreHook`, which owns a reference the collector
    /// cannot see). So the dict, and whatever its hooks close over, is a root while the
    /// tensor lives: a hook closing over its own tensor is never collected.
    pub backward_hooks: Option<ObjId>,
    /// The C++ pre-hook's reference to the same dict, dropped only with the tensor.
    pub cpp_hook_dict: Option<ObjId>,
    /// `_post_accumulate_grad_hooks` of a leaf, held like `_backward_hooks`: as a Python
    /// attribute (visited, cleared) and by the C++ `PostAccumulateGradHook` (invisible).
    pub post_acc_hooks: Option<ObjId>,
    /// The C++ hook's reference to the same dict, dropped only with the tensor.
    pub cpp_post_acc_hooks: Option<ObjId>,
}

impl TensorData {
    /// A tensor object's `tp_traverse` reaches its Python-level state: `_backward_hooks`
    /// (the ctx of a `grad_fn` it solely owns is visited by the heap).
    pub fn traverse(&self, mut visit: impl FnMut(Value, Edge)) {
        if let Some(d) = self.backward_hooks {
            visit(Value::Obj(d), Edge::Role("_backward_hooks"));
        }
        if let Some(d) = self.post_acc_hooks {
            visit(Value::Obj(d), Edge::Role("_post_accumulate_grad_hooks"));
        }
    }

    /// `tp_clear`: drops Python-level state (`_backward_hooks`). The storage, `_base` and
    /// the C++ hook's reference survive until the object is deallocated.
    pub fn clear_python_references(&mut self, out: &mut Vec<Value>) {
        out.extend(self.backward_hooks.take().map(Value::Obj));
        out.extend(self.post_acc_hooks.take().map(Value::Obj));
    }

    /// Deallocation: drops the `_base` reference and the storage reference.
    pub fn release(
        self,
        mut drop_ref: impl FnMut(Value),
        dropped_storage_refs: &mut Vec<StorageId>,
    ) {
        let held = [
            self.base,
            self.grad_fn,
            self.grad,
            self.backward_hooks,
            self.cpp_hook_dict,
            self.post_acc_hooks,
            self.cpp_post_acc_hooks,
        ];
        for held in held.into_iter().flatten() {
            drop_ref(Value::Obj(held));
        }
        dropped_storage_refs.push(self.storage);
    }

    /// `is_leaf`: no `grad_fn`.
    pub fn is_leaf(&self) -> bool {
        self.grad_fn.is_none()
    }

    pub fn numel(&self) -> u64 {
        numel(&self.shape)
    }

    /// `float32[67108864]`: dtype and shape, for reports.
    pub fn describe(&self) -> String {
        describe(self.dtype, &self.shape)
    }
}

pub fn describe(dtype: Dtype, shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("{}[{}]", dtype.name(), dims.join(", "))
}
