//! Autograd for memory: graph nodes, what each op saves for backward, and who holds what.
//!
//! A graph node is a C++ object. It holds, through C++ references the cycle collector
//! cannot see: the tensors it saved for backward, the nodes of its inputs (`next_edges`),
//! a custom Function's `ctx` (a `PyNode` owns its Python object) and, for
//! `AccumulateGrad`, the leaf tensor. So everything a live graph reaches is a root to the
//! collector, and it lives as long as some tensor's `grad_fn` chain reaches it.
//!
//! # What each op saves (PyTorch's `derivatives.yaml`)
//!
//! Saving is conditional, as in the generated code: an operand needed only for another
//! operand's gradient is saved only when that other operand requires grad.
//!
//! | op                              | node              | saves                                                   |
//! |---------------------------------|-------------------|---------------------------------------------------------|
//! | `a + b`, `a - b`, `a + s`       | `AddBackward0`    | nothing (sizes only)                                    |
//! | `a * b`                         | `MulBackward0`    | `b` if `a` requires grad, `a` if `b` requires grad      |
//! | `a * s` (scalar)                | `MulBackward1`    | nothing                                                 |
//! | `a / b`                         | `DivBackward0`    | `b` always, `a` if `b` requires grad                    |
//! | `a @ b`, `mm`, `matmul`         | `MmBackward0`     | `a` if `b` requires grad, `b` if `a` requires grad      |
//! | `F.linear`, `nn.Linear`         | `AddmmBackward0`  | input if weight requires grad, weight if input does     |
//! | `relu`, `sigmoid`, `tanh`, `exp`| `*Backward0`      | its **output** (the result's data, not its PyObject)    |
//! | `softmax`, `log_softmax`        | `*Backward0`      | its output                                              |
//! | `log`, `abs`, `sqrt`, `gelu`... | `*Backward0`      | its input (`sqrt` its output)                           |
//! | `pow(s)`                        | `PowBackward0`    | its input                                               |
//! | `sum`, `mean`, `clone`, `to`    | `*Backward0`      | nothing                                                 |
//! | views (`view`, `t`, ...)        | `ViewBackward0`...| nothing                                                 |
//! | `mse_loss`                      | `MseLossBackward0`| input and target                                        |
//! | `cross_entropy`                 | `NllLossBackward0` + `LogSoftmaxBackward0` | the log-softmax output, target, class weights, `total_weight` |
//! | `embedding`                     | `EmbeddingBackward0` | the indices                                          |
//! | `nn.LSTM`, `nn.GRU` (per step)  | `MmBackward0` ×2 + `ThnnFused*CellBackward0` | see `python/layers.rs`           |
//! | `stack` (inside those layers)   | `StackBackward0`  | nothing; backward hands out slices                      |
//!
//! An op's *input* is saved as the tensor itself (`SavedVariable` keeps the TensorImpl, so
//! its Python object stays alive as a root). An op's *output* is saved as its data only (a
//! saved output must not own its own `grad_fn`, so PyTorch keeps `tensor_data()`): the
//! storage stays, the Python object may die.
//!
//! Backward without `retain_graph` releases every executed node's saved tensors; the nodes
//! themselves live on while a tensor's `grad_fn` reaches them.

use super::StorageId;
use super::{DeviceKind, Dtype};
use crate::heap::{ObjId, Value};

/// A tensor saved for backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// An op input: the tensor object itself, held by C++.
    Tensor(ObjId),
    /// An op output: its data (one storage reference), without the tensor object.
    Data(StorageId),
}

/// Where the gradient for one input of a node goes, and that input's metadata.
#[derive(Debug, Clone)]
pub struct InputEdge {
    /// The input's `grad_fn` (or its `AccumulateGrad`); `None` when it needs no gradient.
    pub node: Option<ObjId>,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
}

/// How a node turns its incoming gradient into its inputs' gradients, for memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradFlow {
    /// Each input gets a newly allocated gradient of its own shape.
    Compute,
    /// The incoming gradient is passed on unchanged or as a view (views, `+`, `clone`):
    /// no allocation when shapes agree.
    PassThrough,
    /// `stack`/`cat`: each input's gradient is a slice (a view) of the incoming one, so
    /// nothing is allocated; the incoming buffer lives while a slice does.
    Split,
    /// `AccumulateGrad`: the gradient goes into the leaf's `.grad`.
    Accumulate,
    /// A custom `autograd.Function`: its Python `backward` runs.
    Python,
}

/// One C++ autograd node.
#[derive(Debug, Clone)]
pub struct GradNode {
    /// PyTorch's class name (`MulBackward0`), shown in reports.
    pub name: &'static str,
    pub flow: GradFlow,
    pub saved: Vec<Saved>,
    pub inputs: Vec<InputEdge>,
    /// A custom Function's ctx (the `PyNode` owns it).
    pub ctx: Option<ObjId>,
    /// `AccumulateGrad`'s leaf tensor.
    pub leaf: Option<ObjId>,
    /// Saved tensors were freed by a backward without `retain_graph`.
    pub released: bool,
    /// Some tensors were saved (so a backward after their release is an error; a node that
    /// saved only sizes can run again, as in PyTorch).
    pub had_saved: bool,
    /// `(index into saved, version when saved)`: the saved tensor's version counter must
    /// not have moved when backward unpacks it.
    pub saved_versions: Vec<(usize, u32)>,
    /// The lazily created Python object of a built-in node (not a reference).
    pub py_object: Option<ObjId>,
}

impl GradNode {
    pub fn new(name: &'static str, flow: GradFlow) -> GradNode {
        GradNode {
            name,
            flow,
            saved: Vec::new(),
            inputs: Vec::new(),
            ctx: None,
            leaf: None,
            released: false,
            had_saved: false,
            saved_versions: Vec::new(),
            py_object: None,
        }
    }

    /// Takes the saved tensors out (backward without `retain_graph`).
    pub fn take_saved(&mut self) -> Vec<Saved> {
        self.released = true;
        self.had_saved |= !self.saved.is_empty();
        std::mem::take(&mut self.saved)
    }

    /// Deallocation: drops everything the node holds.
    pub fn release(
        self,
        mut drop_ref: impl FnMut(Value),
        dropped_storage_refs: &mut Vec<StorageId>,
    ) {
        for s in self.saved {
            match s {
                Saved::Tensor(t) => drop_ref(Value::Obj(t)),
                Saved::Data(st) => dropped_storage_refs.push(st),
            }
        }
        for e in self.inputs {
            if let Some(n) = e.node {
                drop_ref(Value::Obj(n));
            }
        }
        if let Some(c) = self.ctx {
            drop_ref(Value::Obj(c));
        }
        if let Some(l) = self.leaf {
            drop_ref(Value::Obj(l));
        }
    }
}

/// What the memory profiler calls an allocation's role; it travels with alloc events.
pub use crate::timeline::Category;
