//! Attribute access: instance, class and module attributes, builtins, and
//! attribute stores and deletes.

use super::{Interpreter, R};
use crate::heap::{Attrs, ObjId, ObjKind, Sym, Value};
use crate::python::natives;

impl<'a> Interpreter<'a> {
    /// `tensor.grad_fn`: a custom Function's ctx, or a built-in node's Python object,
    /// created on first access and cached while it lives.
    pub(in crate::python) fn grad_fn_object(&mut self, node: Option<ObjId>) -> R<Value> {
        let Some(n) = node else {
            return Ok(Value::None);
        };
        let (ctx, cached) = match self.heap.kind(n) {
            ObjKind::GradNode(g) => (g.ctx, g.py_object),
            _ => (None, None),
        };
        if let Some(obj) = ctx.or(cached) {
            self.heap.incref(Value::Obj(obj));
            return Ok(Value::Obj(obj));
        }
        self.heap.incref(Value::Obj(n));
        let obj = self.alloc(ObjKind::GradFn { node: n });
        if let ObjKind::GradNode(g) = self.heap.kind_mut(n) {
            g.py_object = Some(obj);
        }
        Ok(Value::Obj(obj))
    }

    /// Nodes whose ctx is `ctx` (at most one).
    pub(in crate::python) fn nodes_owning(&self, ctx: ObjId) -> Vec<ObjId> {
        match self.ctx_nodes.get(&ctx) {
            Some(&n)
                if self.heap.is_alive(n)
                    && matches!(self.heap.kind(n), ObjKind::GradNode(g) if g.ctx == Some(ctx)) =>
            {
                vec![n]
            }
            _ => Vec::new(),
        }
    }

    /// Removes an instance attribute, returning it (owned).
    pub(in crate::python) fn take_instance_attr(&mut self, id: ObjId, name: Sym) -> Option<Value> {
        self.take_attr(Value::Obj(id), name)
    }

    // ----- attributes -----------------------------------------------------------------------

    /// Borrowed attribute of an instance's own storage (not its class).
    pub(in crate::python) fn instance_attr(&self, id: ObjId, name: Sym) -> Option<Value> {
        let ObjKind::Instance { attrs, .. } = self.heap.kind(id) else {
            return None;
        };
        match attrs {
            Attrs::Inline(items) => items.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            Attrs::Dict(Some(d)) => match self.heap.kind(*d) {
                ObjKind::Dict(items) => items
                    .iter()
                    .find(|(k, _)| *k == Value::Str(name))
                    .map(|(_, v)| *v),
                _ => None,
            },
            Attrs::Dict(None) => None,
        }
    }

    /// `obj.name` (new reference).
    pub(in crate::python) fn get_attr(&mut self, obj: Value, name: Sym) -> R<Value> {
        if let Some(tensor) = self.ndarray_tensor(obj) {
            return self.ndarray_attr(tensor, name);
        }
        match obj {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => {
                    let class = *class;
                    if let Some(v) = self.instance_attr(id, name) {
                        self.heap.incref(v);
                        return Ok(v);
                    }
                    // `super().attr` (python/super_builtin.rs).
                    if self.torch_class(class) == Some(crate::python::torchlib::TorchClass::Super) {
                        return self.super_attr(id, name);
                    }
                    match self.class_lookup(class, name) {
                        Some(Value::Obj(f))
                            if matches!(self.heap.kind(f), ObjKind::Function(_)) =>
                        {
                            // Materializing a method creates a bound-method object.
                            self.heap.incref(Value::Obj(f));
                            self.heap.incref(obj);
                            let m = self.alloc(ObjKind::BoundMethod {
                                func: f,
                                receiver: obj,
                            });
                            Ok(Value::Obj(m))
                        }
                        Some(v) if self.is_wrapper(v) => self.bind_class_attr(v, Some(obj), class),
                        Some(v) => {
                            self.heap.incref(v);
                            Ok(v)
                        }
                        None if self.names.name(name) == "saved_tensors"
                            && self.torch_class(class)
                                == Some(crate::python::torchlib::TorchClass::FunctionCtx) =>
                        {
                            self.saved_tensors(id)
                        }
                        None if self.names.name(name) == "__dict__" => self.instance_dict(id),
                        // `obj.__class__` (`object.__class__`'s getter), e.g. an `nn.Module`.
                        None if self.names.name(name) == "__class__" => {
                            self.heap.incref(Value::Obj(class));
                            Ok(Value::Obj(class))
                        }
                        // `Function.apply`, a classmethod, through an instance.
                        None if self.names.name(name) == "apply"
                            && self.torch_class(class)
                                == Some(crate::python::torchlib::TorchClass::Function) =>
                        {
                            Ok(self.bound_builtin_method(Value::Obj(class), name))
                        }
                        None => {
                            let cname = self.class_name(class);
                            self.error(format!(
                                "AttributeError: '{cname}' object has no attribute '{}'",
                                self.names.name(name)
                            ))
                        }
                    }
                }
                ObjKind::Class(_) => match self.class_lookup(id, name) {
                    Some(v) if self.is_wrapper(v) => self.bind_class_attr(v, None, id),
                    Some(v @ Value::Native(_)) => Ok(self.namedtuple_class_attr(id, v)),
                    Some(v) => {
                        self.heap.incref(v);
                        Ok(v)
                    }
                    // `MyFn.apply` taken as a value (`my_fn = MyFn.apply`).
                    None if self.names.name(name) == "apply"
                        && self.torch_class(id)
                            == Some(crate::python::torchlib::TorchClass::Function) =>
                    {
                        Ok(self.bound_builtin_method(obj, name))
                    }
                    // `cls.__name__` (`type(x).__name__`): the class's name.
                    None if self.names.name(name) == "__name__" => match self.heap.kind(id) {
                        ObjKind::Class(c) => Ok(Value::Str(c.name)),
                        _ => unreachable!("matched above"),
                    },
                    // What `type_new` sets on every class (`instance_dict.rs`).
                    None if self.names.name(name) == "__module__" => {
                        Ok(Value::Str(self.names.intern("__main__")))
                    }
                    None if self.names.name(name) == "__qualname__" => self.class_qualname(id),
                    None => self.error(format!(
                        "AttributeError: type object has no attribute '{}'",
                        self.names.name(name)
                    )),
                },
                ObjKind::Tensor(_) => natives::tensor_attr(self, id, name),
                ObjKind::StructSeq { .. } => crate::python::return_types::field(self, id, name),
                &ObjKind::NamedTuple { class, .. } => self.namedtuple_attr(obj, class, name),
                ObjKind::Deque { .. } if self.names.name(name) == "maxlen" => {
                    Ok(self.deque_maxlen(id))
                }
                ObjKind::Wrapper(crate::heap::WrapperKind::Finalize, _)
                    if self.names.name(name) == "alive" =>
                {
                    Ok(self.finalizer_alive(id))
                }
                ObjKind::Exception(_) | ObjKind::Traceback(_) | ObjKind::Frame(_) => {
                    self.exception_object_attr(obj, id, name)
                }
                ObjKind::Wrapper(crate::heap::WrapperKind::DataclassField, _) => {
                    self.dataclass_field_attr(id, name)
                }
                ObjKind::Function(_) => self.function_attr(id, name),
                ObjKind::GradFn { .. } => self.grad_fn_attr(id, &self.names.name_rc(name)),
                ObjKind::BoundMethod { func, receiver } => {
                    let (func, receiver) = (*func, *receiver);
                    self.bound_method_attr(func, receiver, name)
                }
                ObjKind::Wrapper(crate::heap::WrapperKind::GradModeFunction, _) => {
                    self.grad_mode_function_attr(id, name)
                }
                ObjKind::Wrapper(crate::heap::WrapperKind::BuiltinMethod, items) => {
                    let items = items.clone();
                    self.builtin_method_attr(&items, name)
                }
                other => {
                    let t = other.type_name();
                    if crate::python::type_builtin::is_container_method(t, self.names.name(name)) {
                        return Ok(self.bound_builtin_method(obj, name));
                    }
                    self.error(format!(
                        "AttributeError: '{t}' object has no attribute '{}'",
                        self.names.name(name)
                    ))
                }
            },
            Value::Module(m) => match self.cached_module_attr(m, name) {
                Some(v) => {
                    // Torch classes are heap objects: the caller owns a new reference.
                    self.heap.incref(v);
                    Ok(v)
                }
                None => {
                    let attr = self.names.name(name);
                    let hint = crate::python::alternatives::for_module_attr(self, obj, attr);
                    self.unsupported(crate::python::constructs::module_attribute(
                        natives::module_display(m),
                        attr,
                        &hint,
                    ))
                }
            },
            other => natives::value_attr(self, other, name),
        }
    }

    /// A builtin by name, resolved once per name.
    pub(super) fn builtin(&mut self, name: Sym) -> Option<Value> {
        if let Some(&v) = self.builtin_cache.get(&name) {
            return v;
        }
        let text = self.names.name_rc(name);
        let v = natives::builtin(&text)
            .filter(|_| !self.builtin_missing_in_version(&text))
            .or_else(|| self.builtin_exception(&text))
            .or_else(|| (&*text == "__name__").then(|| Value::Str(self.names.intern("__main__"))));
        self.builtin_cache.insert(name, v);
        v
    }

    /// [`Interpreter::module_attr`], resolved once per module and name.
    fn cached_module_attr(&mut self, m: crate::heap::NativeId, name: Sym) -> Option<Value> {
        if let Some(&v) = self.module_attr_cache.get(&(m, name)) {
            return v;
        }
        let v = self
            .torch_exception_attr(Value::Module(m), name)
            .or_else(|| self.module_attr(Value::Module(m), self.names.name(name)));
        self.module_attr_cache.insert((m, name), v);
        v
    }

    /// `module.attr`, including torch's classes (`torch.nn.Linear`).
    pub(in crate::python) fn module_attr(&self, m: Value, attr: &str) -> Option<Value> {
        use crate::python::torchlib::TorchClass as C;
        let kind = match (natives::module_display_of(m), attr) {
            ("torch.nn", "Module") => C::Module,
            ("torch.nn", "Linear") => C::Linear,
            ("torch.nn", "ReLU") => C::ReLU,
            ("torch.nn", "Dropout") => C::Dropout,
            ("torch.nn", "Identity") => C::Identity,
            ("torch.nn", "Sequential") => C::Sequential,
            ("torch.nn", "MSELoss") => C::MseLoss,
            ("torch.nn", "Embedding") => C::Embedding,
            ("torch.nn", "LSTM") => C::Lstm,
            ("torch.nn", "GRU") => C::Gru,
            ("torch.nn", "CrossEntropyLoss") => C::CrossEntropyLoss,
            ("torch.nn", "ModuleList") => C::ModuleList,
            ("torch.nn", "ModuleDict") => C::ModuleDict,
            ("torch.nn", "LayerNorm") => C::LayerNorm,
            ("torch.nn", "BatchNorm1d") => C::BatchNorm1d,
            ("torch.nn", "BatchNorm2d") => C::BatchNorm2d,
            ("torch.nn", "Conv1d") => C::Conv1d,
            ("torch.nn", "Conv2d") => C::Conv2d,
            ("torch.nn", "MaxPool2d") => C::MaxPool2d,
            ("torch.nn", "AdaptiveAvgPool2d") => C::AdaptiveAvgPool2d,
            ("torch.nn", "Flatten") => C::Flatten,
            ("torch.nn", "L1Loss") => C::L1Loss,
            ("torch.nn", "NLLLoss") => C::NllLoss,
            ("torch.nn", "BCELoss") => C::BceLoss,
            ("torch.nn", "BCEWithLogitsLoss") => C::BceWithLogitsLoss,
            ("torch.nn", "SmoothL1Loss") => C::SmoothL1Loss,
            ("torch.nn", "RNN") => C::Rnn,
            ("torch.nn", "MultiheadAttention") => C::MultiheadAttention,
            ("torch.nn", "TransformerEncoderLayer") => C::TransformerEncoderLayer,
            ("torch.nn", "TransformerEncoder") => C::TransformerEncoder,
            ("torch.nn", "ParameterList") => C::ParameterList,
            ("torch.nn", "ParameterDict") => C::ParameterDict,
            ("torch.nn", "KLDivLoss") => C::KlDivLoss,
            ("torch.nn", "Softplus") => C::Softplus,
            ("torch.nn", "GroupNorm") => C::GroupNorm,
            ("torch.nn", "LeakyReLU") => C::LeakyRelu,
            ("torch.nn", "SiLU") => C::Silu,
            ("torch.nn", "ELU") => C::Elu,
            ("torch.nn", "Hardtanh") => C::Hardtanh,
            ("torch.nn", "ReLU6") => C::Relu6,
            ("torch.nn", "GELU") => C::Gelu,
            ("torch.nn", "Tanh") => C::Tanh,
            ("torch.nn", "Sigmoid") => C::Sigmoid,
            ("torch.nn", "Mish") => C::Mish,
            ("torch.nn", "Hardswish") => C::Hardswish,
            ("torch.nn", "Softmax") => C::Softmax,
            ("torch.nn", "LogSoftmax") => C::LogSoftmax,
            ("torch.nn", "Softmin") => C::Softmin,
            ("torch.nn", "Unflatten") => C::Unflatten,
            ("torch.nn", "LSTMCell") => C::LstmCell,
            ("torch.nn", "GRUCell") => C::GruCell,
            ("torch.nn", "RNNCell") => C::RnnCell,
            ("torch.utils.data", "Dataset") => C::Dataset,
            ("torch.utils.data", "IterableDataset") => C::IterableDataset,
            ("torch.utils.data", "TensorDataset") => C::TensorDataset,
            ("torch.utils.data", "Subset") => C::Subset,
            ("torch.utils.data", "DataLoader") => C::DataLoader,
            ("torch.autograd", "Function") => C::Function,
            ("torch.distributed", "P2POp") => C::P2POp,
            ("torch.optim", "SGD") => C::Sgd,
            ("torch.optim", "Adam") => C::Adam,
            ("torch.optim", "AdamW") => C::AdamW,
            ("torch.optim", "RMSprop") => C::RmsProp,
            ("torch.optim", "Adagrad") => C::Adagrad,
            ("torch.amp" | "torch.cuda.amp", "GradScaler") => C::GradScaler,
            ("torch.nn.parallel", "DistributedDataParallel") => C::DistributedDataParallel,
            ("torch.optim.lr_scheduler", name) => match C::scheduler_named(name) {
                Some(k) => k,
                None => return natives::module_attr(m, attr),
            },
            _ => return natives::module_attr(m, attr),
        };
        Some(self.torch_classes.id(kind))
    }

    /// `obj.name = value`, taking over `value`.
    pub(in crate::python) fn set_attr(&mut self, obj: Value, name: Sym, value: Value) -> R<()> {
        let Value::Obj(id) = obj else {
            self.heap.decref(value);
            return self.error(format!(
                "AttributeError: cannot set attribute '{}' here",
                self.names.name(name)
            ));
        };
        if matches!(self.heap.kind(id), ObjKind::Instance { .. })
            && self.names.name(name) == "__dict__"
        {
            return self.set_instance_dict(id, value);
        }
        let value = match self.heap.kind(id) {
            &ObjKind::Instance { class, .. } if self.properties_defined => {
                match self.set_through_property(obj, class, name, value)? {
                    Some(v) => v,
                    None => return Ok(()),
                }
            }
            _ => value,
        };
        match self.heap.kind(id) {
            ObjKind::Instance {
                attrs: Attrs::Dict(dict),
                ..
            } => {
                let dict = match *dict {
                    Some(d) => d,
                    None => {
                        // ≤ 3.10: the instance's `__dict__` appears on its first attribute store.
                        let d = self.alloc(ObjKind::Dict(Vec::new()));
                        if let ObjKind::Instance {
                            attrs: Attrs::Dict(slot),
                            ..
                        } = self.heap.kind_mut(id)
                        {
                            *slot = Some(d);
                        }
                        d
                    }
                };
                self.dict_set(dict, Value::Str(name), value);
                Ok(())
            }
            ObjKind::Instance {
                attrs: Attrs::Inline(_),
                ..
            } => {
                let old = match self.heap.kind_mut(id) {
                    ObjKind::Instance {
                        attrs: Attrs::Inline(items),
                        ..
                    } => match items.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                        None => {
                            items.push((name, value));
                            None
                        }
                    },
                    _ => None,
                };
                if let Some(old) = old {
                    self.heap.decref(old);
                }
                Ok(())
            }
            ObjKind::Class(_) => {
                let old = match self.heap.kind_mut(id) {
                    ObjKind::Class(c) => match c.attrs.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                        None => {
                            c.attrs.push((name, value));
                            None
                        }
                    },
                    _ => None,
                };
                if let Some(old) = old {
                    self.heap.decref(old);
                }
                Ok(())
            }
            ObjKind::Tensor(_) => {
                let r = natives::set_tensor_attr(self, id, name, value);
                self.heap.decref(value);
                r
            }
            ObjKind::Exception(_) => self.set_exception_attr(id, name, value),
            ObjKind::Function(_) => self.set_function_attr(id, name, value),
            &ObjKind::NamedTuple { class, .. } => {
                self.heap.decref(value);
                self.namedtuple_set_attr(class, name)
            }
            other => {
                let t = other.type_name();
                self.heap.decref(value);
                self.error(format!(
                    "AttributeError: '{t}' object attribute '{}' is read-only",
                    self.names.name(name)
                ))
            }
        }
    }

    /// Removes an attribute from an instance; returns the old value (owned).
    pub(super) fn take_attr(&mut self, obj: Value, name: Sym) -> Option<Value> {
        let Value::Obj(id) = obj else { return None };
        let dict = match self.heap.kind_mut(id) {
            ObjKind::Instance {
                attrs: Attrs::Inline(items),
                ..
            } => {
                let i = items.iter().position(|(n, _)| *n == name)?;
                return Some(items.remove(i).1);
            }
            ObjKind::Instance {
                attrs: Attrs::Dict(Some(d)),
                ..
            } => *d,
            _ => return None,
        };
        let ObjKind::Dict(items) = self.heap.kind_mut(dict) else {
            return None;
        };
        let i = items.iter().position(|(k, _)| *k == Value::Str(name))?;
        let (k, v) = items.remove(i);
        self.heap.decref(k);
        Some(v)
    }

    /// `d[key] = value` on a dict object, taking over `key` and `value`.
    pub(in crate::python) fn dict_set(&mut self, dict: ObjId, key: Value, value: Value) {
        self.heap.maintain_dict_tracking(dict, key);
        self.heap.maintain_dict_tracking(dict, value);
        let found = self.dict_find_store(dict, key);
        let old = match self.heap.kind_mut(dict) {
            ObjKind::Dict(items) => match found.map(|i| &mut items[i]) {
                Some(slot) => Some((key, std::mem::replace(&mut slot.1, value))),
                None => {
                    items.push((key, value));
                    None
                }
            },
            _ => None,
        };
        if let Some((dup_key, old)) = old {
            self.heap.decref(dup_key);
            self.heap.decref(old);
        }
    }
}
