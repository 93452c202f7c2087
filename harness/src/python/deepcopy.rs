//! `copy.deepcopy` and `copy.copy`: what a copy allocates and what it shares.
//!
//! `deepcopy` walks containers and instances with a memo (an object reached twice is
//! copied once, and cycles close on the copy). A leaf tensor is copied by
//! `Tensor.__deepcopy__`: its whole storage is duplicated (through the memo, so views of
//! one storage copied together share one new storage; a view's copy holds the full base
//! storage, not only the viewed bytes), `requires_grad` is kept and `.grad` is copied too.
//! A tensor with history is refused, as PyTorch refuses it. Functions, classes and modules
//! are atomic (shared). So `copy.deepcopy(opt.state_dict())` costs one copy of every state
//! tensor, which is the classic "best checkpoint kept in memory" leak.
//!
//! The memo dict `deepcopy` creates is allocated and freed around the walk (it counts for
//! the collector); the keep-alive list and `__reduce_ex__` tuples are not modelled.

use super::interp::{Interpreter, R};
use crate::heap::{Attrs, ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, StorageId, TensorData};
use std::collections::HashMap;

/// The objects already copied in one `deepcopy` call.
#[derive(Default)]
struct Memo {
    objects: HashMap<ObjId, Value>,
    storages: HashMap<StorageId, StorageId>,
}

impl Interpreter<'_> {
    /// `copy.deepcopy(x)`.
    pub(super) fn deepcopy(&mut self, x: Value) -> R<Value> {
        let memo_dict = self.alloc(ObjKind::Dict(Vec::new()));
        let mut memo = Memo::default();
        let result = self.deepcopy_value(x, &mut memo);
        self.heap.decref_id(memo_dict);
        result
    }

    /// `copy.copy(x)`: a new container holding the same items; a tensor becomes a new
    /// object on the same storage (its `.grad` and history are not carried); immutable
    /// values are returned as they are.
    pub(super) fn shallow_copy(&mut self, x: Value) -> R<Value> {
        let Value::Obj(id) = x else {
            self.heap.incref(x);
            return Ok(x);
        };
        let kind = match self.heap.kind(id) {
            ObjKind::List(items) => ObjKind::List(items.clone()),
            ObjKind::Dict(items) => ObjKind::Dict(items.clone()),
            ObjKind::Tensor(t) => {
                // `__reduce_ex__` rebuilds the tensor on the same storage
                // (`_rebuild_tensor_v2` / `_rebuild_parameter`): a new object, no bytes.
                let t = t.clone();
                let alias = self.new_tensor_as(
                    t.shape.clone(),
                    t.dtype,
                    t.device,
                    Some((t.storage, None)),
                    Category::Input,
                )?;
                if let Value::Obj(a) = alias
                    && let ObjKind::Tensor(new) = self.heap.kind_mut(a)
                {
                    new.requires_grad = t.requires_grad;
                    new.is_param = t.is_param;
                    new.contiguous = t.contiguous;
                }
                return Ok(alias);
            }
            ObjKind::Instance { .. } => {
                let (new, attrs) = self.new_instance_like(id)?;
                for (name, v) in attrs {
                    self.heap.incref(v);
                    self.set_attr(Value::Obj(new), name, v)?;
                }
                return Ok(Value::Obj(new));
            }
            _ => {
                self.heap.incref(x);
                return Ok(x);
            }
        };
        let items: Vec<Value> = match &kind {
            ObjKind::List(items) => items.clone(),
            ObjKind::Dict(items) => items.iter().flat_map(|(k, v)| [*k, *v]).collect(),
            _ => Vec::new(),
        };
        for v in items {
            self.heap.incref(v);
        }
        Ok(Value::Obj(self.alloc(kind)))
    }

    fn deepcopy_value(&mut self, x: Value, memo: &mut Memo) -> R<Value> {
        let Value::Obj(id) = x else {
            self.heap.incref(x);
            return Ok(x);
        };
        if let Some(&done) = memo.objects.get(&id) {
            self.heap.incref(done);
            return Ok(done);
        }
        let copy = match self.heap.kind(id) {
            ObjKind::List(items) => {
                let items = items.clone();
                let new = self.alloc(ObjKind::List(Vec::new()));
                memo.objects.insert(id, Value::Obj(new));
                for v in items {
                    let c = self.deepcopy_value(v, memo)?;
                    if let ObjKind::List(l) = self.heap.kind_mut(new) {
                        l.push(c);
                    }
                }
                Value::Obj(new)
            }
            ObjKind::Dict(items) => {
                let items = items.clone();
                let new = self.alloc(ObjKind::Dict(Vec::new()));
                memo.objects.insert(id, Value::Obj(new));
                for (k, v) in items {
                    let k = self.deepcopy_value(k, memo)?;
                    let v = self.deepcopy_value(v, memo)?;
                    self.dict_set(new, k, v);
                }
                Value::Obj(new)
            }
            ObjKind::Tuple(items) => {
                let items = items.clone();
                let mut copied = Vec::with_capacity(items.len());
                for &v in &items {
                    copied.push(self.deepcopy_value(v, memo)?);
                }
                // A tuple whose items all copy to themselves is returned as it is.
                if copied == items {
                    for v in copied {
                        self.heap.decref(v);
                    }
                    self.heap.incref(x);
                    x
                } else {
                    Value::Obj(self.alloc(ObjKind::Tuple(copied)))
                }
            }
            ObjKind::Tensor(t) => {
                let t = t.clone();
                self.deepcopy_tensor(t, memo)?
            }
            ObjKind::Instance { .. } => {
                let (new, attrs) = self.new_instance_like(id)?;
                memo.objects.insert(id, Value::Obj(new));
                for (name, v) in attrs {
                    let c = self.deepcopy_value(v, memo)?;
                    self.set_attr(Value::Obj(new), name, c)?;
                }
                Value::Obj(new)
            }
            ObjKind::Class(_) | ObjKind::Function(_) | ObjKind::Range { .. } | ObjKind::Size(_) => {
                self.heap.incref(x);
                x
            }
            other => {
                let what = match other {
                    ObjKind::Generator(_) => "generator",
                    ObjKind::Future(_) => "asyncio future",
                    ObjKind::Frame(_) => "frame",
                    ObjKind::GradNode(_) | ObjKind::GradFn { .. } => "autograd node",
                    _ => "object of this type",
                };
                return self.unsupported(format!("copy.deepcopy of a {what}"));
            }
        };
        memo.objects.insert(id, copy);
        Ok(copy)
    }

    /// `Tensor.__deepcopy__` of a leaf: the storage copied once per call, the tensor
    /// rebuilt on it, `requires_grad` and `.grad` carried over.
    fn deepcopy_tensor(&mut self, t: TensorData, memo: &mut Memo) -> R<Value> {
        if t.grad_fn.is_some() {
            return self.error(
                "RuntimeError: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001",
            );
        }
        // `Parameter.__deepcopy__` clones its data (the viewed bytes only) and leaves
        // `.grad` behind; a plain tensor copies its whole storage and its gradient.
        if t.is_param {
            let storage = self.new_storage(&t.shape, t.dtype, t.device, Category::Parameter)?;
            let id = self.alloc(ObjKind::Tensor(TensorData {
                storage,
                base: None,
                grad_fn: None,
                output_nr: 0,
                grad: None,
                contiguous: true,
                backward_hooks: None,
                cpp_hook_dict: None,
                post_acc_hooks: None,
                cpp_post_acc_hooks: None,
                ..t
            }));
            return Ok(Value::Obj(id));
        }
        let storage = match memo.storages.get(&t.storage) {
            Some(&s) => {
                self.storages.add_ref(s);
                s
            }
            None => {
                let (shape, dtype) = {
                    let s = self.storages.get(t.storage);
                    (s.shape.clone(), s.dtype)
                };
                let category = match self.storages.get(t.storage).category {
                    Category::Temporary => Category::Input,
                    c => c,
                };
                let s = self.new_storage(&shape, dtype, t.device, category)?;
                memo.storages.insert(t.storage, s);
                s
            }
        };
        let grad = match t.grad {
            Some(g) => self.deepcopy_value(Value::Obj(g), memo)?.obj(),
            None => None,
        };
        let id = self.alloc(ObjKind::Tensor(TensorData {
            storage,
            base: None,
            grad_fn: None,
            output_nr: 0,
            grad,
            backward_hooks: None,
            cpp_hook_dict: None,
            post_acc_hooks: None,
            cpp_post_acc_hooks: None,
            ..t
        }));
        Ok(Value::Obj(id))
    }

    /// An empty instance of `id`'s class, and `id`'s attributes (borrowed).
    fn new_instance_like(&mut self, id: ObjId) -> R<(ObjId, Vec<(Sym, Value)>)> {
        let (class, attrs) = match self.heap.kind(id) {
            ObjKind::Instance { class, attrs } => (*class, attrs.clone()),
            _ => return self.error("internal: not an instance"),
        };
        let pairs: Vec<(Sym, Value)> = match attrs {
            Attrs::Inline(items) => items,
            Attrs::Dict(Some(d)) => match self.heap.kind(d) {
                ObjKind::Dict(items) => items
                    .iter()
                    .filter_map(|(k, v)| match k {
                        Value::Str(s) => Some((*s, *v)),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            Attrs::Dict(None) => Vec::new(),
        };
        self.heap.incref(Value::Obj(class));
        let fresh = if self.heap.profile.instance_dict_object {
            Attrs::Dict(None)
        } else {
            Attrs::Inline(Vec::new())
        };
        let new = self.alloc(ObjKind::Instance {
            class,
            attrs: fresh,
        });
        Ok((new, pairs))
    }
}
