//! `torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)` and
//! `torch.autograd.graph.save_on_cpu(pin_memory=False)`.
//!
//! As `torch/autograd/graph.py` and `SavedVariable` (`torch/csrc/autograd/saved_variable.cpp`)
//! do: entering the manager pushes its pair on a stack (`_push_saved_tensors_default_hooks`),
//! leaving pops it. Every tensor a node saves while a pair is on the stack goes through the
//! top pair's `pack` (run under `NoGradGuard`: the hook records nothing) and the node keeps
//! what `pack` returned, with both hooks (`PySavedVariableHooks` owns the three), never the
//! tensor: a `pack` that copies to the host lets the device bytes die with their last other
//! reference, one that returns its argument keeps them, one that stores the tensor in a
//! list keeps them for as long as the list lives. A saved input is passed as its own tensor
//! object, a saved output as the output itself (so an identity `pack` makes the node hold
//! its own output: a C++ cycle no collection frees), an op's other results as new tensor
//! objects on their bytes. In backward the node calls `unpack` on what it kept and uses the
//! returned tensor while it runs (a host copy moved back allocates there); the version check
//! is skipped, as PyTorch cannot see versions through the hooks. Releasing the node
//! (backward without `retain_graph`) drops the packed object and the hooks.
//!
//! Approximations: an exception raised by `pack` is PyTorch's error at the op; the model
//! notes it in the run and saves that tensor without hooks. The tensors the in-place ops
//! save after building their node (`original_self`) and checkpointing's saved inputs are
//! not packed. `save_on_cpu`'s device is kept as its name (`'cuda'`), not a `torch.device`.

use super::interp::{Exc, Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use crate::torch::{Category, DeviceKind, GradNode, Saved};

/// One entry of the hook stack: a Python pair (owned references), or `save_on_cpu`.
#[derive(Debug, Clone, Copy)]
pub(super) enum HookPair {
    Python { pack: Value, unpack: Value },
    OnCpu,
}

/// Items of a `saved_tensors_hooks` manager: `pack`, `unpack`; `save_on_cpu`'s: `None`,
/// `None`, `pin_memory`.
const PACK: usize = 0;
const UNPACK: usize = 1;

impl Interpreter<'_> {
    /// `torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)`: the manager.
    pub(super) fn saved_tensors_hooks_new(&mut self, pack: Value, unpack: Value) -> R<Value> {
        for (name, f) in [("pack_hook", pack), ("unpack_hook", unpack)] {
            if !self.callable(f) {
                let t = self.type_name_of(f);
                return self.error(format!(
                    "TypeError: saved_tensors_hooks(): {name} must be callable, not '{t}'"
                ));
            }
        }
        self.heap.incref(pack);
        self.heap.incref(unpack);
        Ok(self.new_wrapper(WrapperKind::SavedTensorsHooks, vec![pack, unpack]))
    }

    /// `torch.autograd.graph.save_on_cpu(pin_memory=False)`: the manager.
    pub(super) fn save_on_cpu_new(&mut self, pin_memory: bool) -> Value {
        self.new_wrapper(
            WrapperKind::SavedTensorsHooks,
            vec![Value::None, Value::None, Value::Bool(pin_memory)],
        )
    }

    /// `__enter__`: pushes the manager's pair.
    pub(super) fn saved_hooks_enter(&mut self, manager: ObjId) {
        let ObjKind::Wrapper(WrapperKind::SavedTensorsHooks, items) = self.heap.kind(manager)
        else {
            return;
        };
        let pair = if items.len() > 2 {
            HookPair::OnCpu
        } else {
            HookPair::Python {
                pack: items[PACK],
                unpack: items[UNPACK],
            }
        };
        if let HookPair::Python { pack, unpack } = pair {
            self.heap.incref(pack);
            self.heap.incref(unpack);
        }
        self.torch_classes.saved_hooks.push(pair);
    }

    /// `__exit__`: pops the top pair.
    pub(super) fn saved_hooks_exit(&mut self) {
        if let Some(HookPair::Python { pack, unpack }) = self.torch_classes.saved_hooks.pop() {
            self.heap.decref_all([pack, unpack]);
        }
    }

    /// Packs what `node` saved through the top pair of the stack, if any. `output` is the
    /// op's result object (a saved output is passed as it).
    pub(super) fn pack_saved(&mut self, node: &mut GradNode, output: Option<ObjId>) {
        let Some(&pair) = self.torch_classes.saved_hooks.last() else {
            return;
        };
        if node.saved.is_empty() {
            return;
        }
        let saved = std::mem::take(&mut node.saved);
        let versions = std::mem::take(&mut node.saved_versions);
        for (i, s) in saved.into_iter().enumerate() {
            match self.pack_one(pair, s, output) {
                Ok(Some(data)) => {
                    let (pack, unpack) = match pair {
                        HookPair::Python { pack, unpack } => (pack, unpack),
                        HookPair::OnCpu => (Value::None, Value::None),
                    };
                    self.heap.incref(pack);
                    self.heap.incref(unpack);
                    super::autograd::release_saved(self, vec![s]);
                    node.saved.push(Saved::Packed { data, pack, unpack });
                }
                Ok(None) => self.keep_unpacked(node, s, &versions, i),
                Err(e) => {
                    let what = self.pack_error_text(&e);
                    self.discard(e);
                    self.recorder.approximation(format!(
                        "a saved_tensors_hooks pack hook raised {what}: PyTorch raises it at the op; the model saved that tensor without hooks"
                    ));
                    self.keep_unpacked(node, s, &versions, i);
                }
            }
        }
    }

    fn keep_unpacked(
        &mut self,
        node: &mut GradNode,
        s: Saved,
        versions: &[(usize, u32)],
        i: usize,
    ) {
        if let Some(&(_, v)) = versions.iter().find(|(k, _)| *k == i) {
            node.saved_versions.push((node.saved.len(), v));
        }
        node.saved.push(s);
    }

    /// Runs the pack hook on one saved tensor (grad mode off); `None` when it is not one to
    /// pack (already packed).
    fn pack_one(&mut self, pair: HookPair, s: Saved, output: Option<ObjId>) -> R<Option<Value>> {
        let tensor = match s {
            Saved::Tensor(t) => {
                self.heap.incref(Value::Obj(t));
                Value::Obj(t)
            }
            Saved::Data(st) => match output {
                Some(o)
                    if self
                        .tensor_data(Value::Obj(o))
                        .is_some_and(|t| t.storage == st) =>
                {
                    self.heap.incref(Value::Obj(o));
                    Value::Obj(o)
                }
                _ => {
                    let storage = self.storages.get(st);
                    let (shape, dtype) = (storage.shape.to_vec(), storage.dtype);
                    let device = if storage.addr.is_some() {
                        DeviceKind::Cuda
                    } else {
                        DeviceKind::Cpu
                    };
                    self.new_tensor_as(shape, dtype, device, Some((st, None)), Category::Input)?
                }
            },
            Saved::Packed { .. } => return Ok(None),
        };
        let was = std::mem::replace(&mut self.grad_enabled, false);
        let packed = match pair {
            HookPair::Python { pack, .. } => self.call(pack, vec![tensor], Vec::new()),
            HookPair::OnCpu => self.pack_to_cpu(tensor),
        };
        self.grad_enabled = was;
        packed.map(Some)
    }

    /// `save_on_cpu`'s pack: `(tensor.device, tensor.cpu())` (`tensor` owned).
    fn pack_to_cpu(&mut self, tensor: Value) -> R<Value> {
        let device = match self.tensor_data(tensor).map(|t| t.device) {
            Some(DeviceKind::Cuda) => "cuda",
            _ => "cpu",
        };
        let cpu = self.sym("cpu");
        let host = self.call_method(tensor, cpu, Vec::new(), Vec::new());
        self.heap.decref(tensor);
        let host = host?;
        let device = Value::Str(self.sym(device));
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![device, host]))))
    }

    /// The tensors `unpack` returns for each packed entry of `node` (owned, in order): the
    /// node uses them while it runs.
    pub(super) fn unpack_saved(&mut self, node: &GradNode) -> R<Vec<Value>> {
        let mut out = Vec::new();
        for s in &node.saved {
            let Saved::Packed { data, unpack, .. } = *s else {
                continue;
            };
            match self.unpack_one(data, unpack) {
                Ok(t) => out.push(t),
                Err(e) => {
                    self.heap.decref_all(out);
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// One entry's `unpack(data)`, which must give a tensor (PyTorch's `TypeError`).
    pub(super) fn unpack_one(&mut self, data: Value, unpack: Value) -> R<Value> {
        self.heap.incref(data);
        let result = if unpack == Value::None {
            self.unpack_from_cpu(data)
        } else {
            self.call(unpack, vec![data], Vec::new())
        }?;
        if self.tensor_data(result).is_none() {
            let t = self.type_name_of(result);
            self.heap.decref(result);
            return self.error(format!(
                "TypeError: Output of saved tensor unpack_hook expected to be a Tensor but got result of type {t}"
            ));
        }
        Ok(result)
    }

    /// `save_on_cpu`'s unpack: `tensor.to(device)` (`packed` owned).
    fn unpack_from_cpu(&mut self, packed: Value) -> R<Value> {
        let items = match packed.obj().map(|p| self.heap.kind(p)) {
            Some(ObjKind::Tuple(items)) if items.len() == 2 => [items[0], items[1]],
            _ => {
                self.heap.decref(packed);
                return self.error("TypeError: save_on_cpu: a packed entry is not a pair");
            }
        };
        let [device, host] = items;
        let to = self.sym("to");
        let moved = self.call_method(host, to, vec![device], Vec::new());
        self.heap.decref(packed);
        moved
    }

    /// A short text of an exception in flight, for a note.
    fn pack_error_text(&self, e: &Exc) -> String {
        match e {
            Exc::Raised { exception, .. } => self.exception_summary(*exception),
            Exc::Error { message, .. } => message.clone(),
            Exc::Oom => "torch.OutOfMemoryError".to_string(),
        }
    }
}

/// The `torch.autograd.graph.*` entry points of this file.
pub(super) fn call(
    it: &mut Interpreter<'_>,
    n: super::natives::Native,
    a: &super::natives::Args,
) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    match n {
        super::natives::Native::SavedTensorsHooksFn => {
            match (arg(it, 0, "pack_hook"), arg(it, 1, "unpack_hook")) {
                (Some(pack), Some(unpack)) => it.saved_tensors_hooks_new(pack, unpack),
                _ => it.error(
                    "TypeError: saved_tensors_hooks.__init__() missing required arguments: 'pack_hook' and 'unpack_hook'",
                ),
            }
        }
        _ => {
            let pin_memory = match arg(it, 0, "pin_memory") {
                Some(v) => it.truth(v)?,
                None => false,
            };
            if let Some(d) = arg(it, 1, "device_type")
                && !matches!(d, Value::Str(s) if it.names.name(s) == "cuda")
            {
                return it.unsupported("save_on_cpu(device_type=...) other than 'cuda'");
            }
            Ok(it.save_on_cpu_new(pin_memory))
        }
    }
}
