//! Methods of tensors and other non-heap values, and views (the ops behind the methods are
//! in `tensor_ops.rs`, attributes in `tensor_attrs.rs`).

use super::*;

/// Marks a new view as not row-major (transposes, permutes, expands).
pub(super) fn non_contiguous(it: &mut Interpreter<'_>, v: Value) -> R<Value> {
    if let Value::Obj(id) = v
        && let ObjKind::Tensor(t) = it.heap.kind_mut(id)
    {
        t.contiguous = false;
    }
    Ok(v)
}

/// A view of tensor `id` with `shape`: same storage, `_base` set to the root base.
pub(in crate::python) fn view(it: &mut Interpreter<'_>, id: ObjId, shape: Vec<i64>) -> R<Value> {
    view_by(it, id, shape, "view")
}

/// [`view`] made by the view op `op` (a row of the autograd table naming its node).
pub(in crate::python) fn view_by(
    it: &mut Interpreter<'_>,
    id: ObjId,
    shape: Vec<i64>,
    op: &str,
) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!("checked by caller")
    };
    let (storage, dtype, device) = (t.storage, t.dtype, t.device);
    let base = t.base.unwrap_or(id);
    let out = it.new_tensor(shape, dtype, device, Some((storage, Some(base))))?;
    autograd::record_op(it, out, op, &[Value::Obj(id)]);
    Ok(out)
}

pub(super) fn dims_from(it: &Interpreter<'_>, p: &[Value]) -> R<Vec<i64>> {
    match p {
        [single @ Value::Obj(_)] => sequence_items(it, *single)?
            .into_iter()
            .map(|d| int_arg(it, d, "dimension"))
            .collect(),
        // Read in place: `view(-1, 4)` copies no argument list.
        many => many.iter().map(|&d| int_arg(it, d, "dimension")).collect(),
    }
}

pub(in crate::python) fn norm_dim(it: &Interpreter<'_>, d: i64, ndim: usize) -> R<usize> {
    let n = ndim as i64;
    let d = if d < 0 { d + n } else { d };
    if d < 0 || d >= n.max(1) {
        return it.error(format!(
            "IndexError: Dimension out of range (got {d} for {ndim} dimensions)"
        ));
    }
    Ok(d as usize)
}

pub(in crate::python) fn call_method(
    it: &mut Interpreter<'_>,
    recv: Value,
    name: Sym,
    pos: Vec<Value>,
    kw: Vec<(Sym, Value)>,
) -> R<Value> {
    let args = Args { pos, kw };
    let method_rc = it.names.name_rc(name);
    let method: &str = &method_rc;
    let result = match recv {
        Value::Obj(id) => match it.heap.kind(id) {
            // The check's function name is formatted only when there are keywords to check.
            ObjKind::Tensor(_) if args.kw.is_empty() => tensor_method(it, id, method, &args),
            // A method the model lacks is named as such, not as a keyword it does not know.
            ObjKind::Tensor(_) if !tensor_method_known(method) => it.unsupported(format!(
                "tensor method '{method}'{}",
                crate::python::alternatives::for_tensor_method(method)
            )),
            ObjKind::Tensor(_) => crate::python::keywords::check(
                it,
                &format!("Tensor.{method}"),
                crate::python::keywords::for_tensor_method(method),
                &args.kw,
            )
            .and_then(|()| tensor_method(it, id, method, &args)),
            ObjKind::List(_) => crate::python::builtin_calls::list_method(it, id, method, &args),
            ObjKind::Dict(_) => crate::python::builtin_calls::dict_method(it, id, method, &args),
            ObjKind::Deque { .. } => it.deque_method(id, method, &args.pos),
            ObjKind::Set { .. } => it.set_method(id, method, &args.pos),
            ObjKind::Generator(_) => it.generator_method(id, method, &args.pos),
            ObjKind::Future(_) => it.future_method(id, method, &args.pos),
            ObjKind::Wrapper(crate::heap::WrapperKind::LruCache, _) => {
                it.lru_cache_method(id, method, &args.pos)
            }
            ObjKind::Wrapper(
                crate::heap::WrapperKind::WeakValueDict
                | crate::heap::WrapperKind::WeakKeyDict
                | crate::heap::WrapperKind::WeakSet,
                _,
            ) => it.weak_container_method(id, method, &args.pos),
            ObjKind::CppHandle { type_name, .. } if *type_name == crate::python::vm::QUEUE_TYPE => {
                it.queue_method(id, method, &args.pos)
            }
            ObjKind::CppHandle { type_name, held }
                if *type_name == crate::python::numpy_arrays::NDARRAY =>
            {
                let tensor = held[0].obj().expect("an array's tensor");
                it.ndarray_method(tensor, method, &args.pos)
            }
            ObjKind::CppHandle { .. } if method == "wait" || method == "is_completed" => {
                if method == "wait" {
                    // The work completed: it drops its tensors.
                    let held = match it.heap.kind_mut(id) {
                        ObjKind::CppHandle { held, .. } => std::mem::take(held),
                        _ => Vec::new(),
                    };
                    it.heap.decref_all(held);
                }
                Ok(Value::Bool(true))
            }
            ObjKind::GradFn { node } if method.starts_with("register_") => {
                it.register_node_hook(*node, method, &args.pos)
            }
            // `grad_fn.name()`: the node's class name.
            ObjKind::GradFn { node } if method == "name" => {
                let name = match it.heap.kind(*node) {
                    ObjKind::GradNode(n) => n.name,
                    _ => "",
                };
                Ok(Value::Str(it.names.intern(name)))
            }
            // `m.__func__(obj, ...)`: an attribute of a bound method, called.
            ObjKind::BoundMethod { func, receiver } => {
                let (func, receiver) = (*func, *receiver);
                it.bound_method_attr(func, receiver, name).and_then(|f| {
                    args.pos.iter().for_each(|&v| it.heap.incref(v));
                    args.kw.iter().for_each(|&(_, v)| it.heap.incref(v));
                    let r = it.call(f, args.pos.clone(), args.kw.clone());
                    it.heap.decref(f);
                    r
                })
            }
            other => {
                let t = other.type_name();
                it.unsupported(format!("method '{method}' of '{t}'"))
            }
        },
        Value::Str(s) => match it.str_method(s, method, &args.pos, &args.kw) {
            Some(r) => r,
            None => it.unsupported(format!("method '{method}' of str")),
        },
        Value::Native(n)
            if n == super::Native::ItertoolsChain.id() && method == "from_iterable" =>
        {
            it.itertools_new(
                super::Native::ItertoolsChainFromIterable,
                &args.pos,
                &args.kw,
            )
        }
        Value::Dtype(_) | Value::Device(_) | Value::Int(_) | Value::Float(_) => {
            it.unsupported(format!("method '{method}' of {}", it.display(recv)))
        }
        _ => it.error(format!("AttributeError: object has no method '{method}'")),
    };
    args.drop_all(it);
    result
}

pub(super) fn tensor_method(
    it: &mut Interpreter<'_>,
    id: ObjId,
    method: &str,
    a: &Args,
) -> R<Value> {
    if matches!(method, "view" | "reshape")
        && let Some(r) = view_in_place(it, id, &a.pos)
    {
        return r;
    }
    let t = tensor_record(it, id).clone();
    let p = &a.pos;
    let same = |it: &mut Interpreter<'_>| {
        it.heap.incref(Value::Obj(id));
        Ok(Value::Obj(id))
    };
    match method {
        "view" | "reshape" => {
            if let [Value::Dtype(_)] = p.as_slice() {
                return it.unsupported("view(dtype)");
            }
            let target = dims_from(it, p)?;
            match torch::reshape_shape(&t.shape, &target) {
                Ok(shape) if t.contiguous || shape == t.shape => view(it, id, shape),
                Ok(_) if method == "view" => it.error(
                    "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
                ),
                Ok(shape) => {
                    // `reshape` no view can express: `_unsafe_view(self.clone(contiguous))`,
                    // an alias of the copy without a base (`CloneBackward0` under
                    // `UnsafeViewBackward0`).
                    let src = [Value::Obj(id)];
                    let copy = op_output(it, t.shape.clone(), t.dtype, t.device, &src)?;
                    autograd::record_op(it, copy, "clone", &src);
                    let out = match it.tensor_data(copy) {
                        Some(c) => it.new_tensor(shape, t.dtype, t.device, Some((c.storage, None))),
                        None => Ok(Value::None),
                    };
                    if let Ok(o) = out {
                        autograd::record_op(it, o, "unsafe_view", &[copy]);
                    }
                    it.heap.decref(copy);
                    out
                }
                Err(e) => it.error(format!("RuntimeError: {e}")),
            }
        }
        "flatten" => {
            let start = match p.first() {
                Some(&v) => norm_dim(it, int_arg(it, v, "start_dim")?, t.shape.len())?,
                None => 0,
            };
            let end = match p.get(1) {
                Some(&v) => norm_dim(it, int_arg(it, v, "end_dim")?, t.shape.len())?,
                None => t.shape.len().saturating_sub(1),
            };
            if t.shape.is_empty() {
                return view(it, id, vec![1]);
            }
            let mut shape = t.shape[..start].to_vec();
            shape.push(t.shape[start..=end].iter().product());
            shape.extend_from_slice(&t.shape[end + 1..]);
            view(it, id, shape)
        }
        "t" | "transpose" => {
            let (d0, d1) = if method == "t" {
                if t.shape.len() > 2 {
                    return it.error("RuntimeError: t() expects a tensor with <= 2 dimensions");
                }
                (0, t.shape.len().saturating_sub(1))
            } else {
                let [a0, a1] = p.as_slice() else {
                    return it.error("TypeError: transpose expects two dimensions");
                };
                (
                    norm_dim(it, int_arg(it, *a0, "dim0")?, t.shape.len())?,
                    norm_dim(it, int_arg(it, *a1, "dim1")?, t.shape.len())?,
                )
            };
            let mut shape = t.shape.clone();
            if !shape.is_empty() {
                shape.swap(d0, d1);
            }
            let op = if method == "t" { "t" } else { "transpose" };
            let v = view_by(it, id, shape, op)?;
            non_contiguous(it, v)
        }
        "permute" => {
            let dims = dims_from(it, p)?;
            if dims.len() != t.shape.len() {
                return it.error("RuntimeError: permute: number of dims don't match");
            }
            let mut shape = Vec::with_capacity(dims.len());
            for d in dims {
                shape.push(t.shape[norm_dim(it, d, t.shape.len())?]);
            }
            let v = view_by(it, id, shape, "permute")?;
            non_contiguous(it, v)
        }
        "unsqueeze" => {
            let [d] = p.as_slice() else {
                return it.error("TypeError: unsqueeze expects a dimension");
            };
            let d = int_arg(it, *d, "dim")?;
            let n = t.shape.len() as i64 + 1;
            let d = if d < 0 { d + n } else { d };
            if d < 0 || d >= n {
                return it.error("IndexError: Dimension out of range");
            }
            let mut shape = t.shape.clone();
            shape.insert(d as usize, 1);
            view_by(it, id, shape, "unsqueeze")
        }
        "squeeze" => {
            let shape: Vec<i64> = match p.first() {
                Some(&d) => {
                    let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
                    let mut s = t.shape.clone();
                    if s.get(d) == Some(&1) {
                        s.remove(d);
                    }
                    s
                }
                None => t.shape.iter().copied().filter(|&d| d != 1).collect(),
            };
            let op = if p.is_empty() {
                "squeeze"
            } else {
                "squeeze_dim"
            };
            view_by(it, id, shape, op)
        }
        "expand" => {
            let target = dims_from(it, p)?;
            let shape = match torch::broadcast(
                &t.shape,
                &target
                    .iter()
                    .map(|&d| if d == -1 { 1 } else { d })
                    .collect::<Vec<_>>(),
            ) {
                Ok(s) => s,
                Err(e) => return it.error(format!("RuntimeError: {e}")),
            };
            let v = view_by(it, id, shape, "expand")?;
            non_contiguous(it, v)
        }
        "detach" => it.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None))),
        "detach_" => {
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => {
                    t.requires_grad = false;
                    t.grad_fn.take()
                }
                _ => None,
            };
            if let Some(n) = old {
                it.heap.decref_id(n);
            }
            same(it)
        }
        "requires_grad_" => {
            let flag = match p.first().or(a.kw(it, "requires_grad").as_ref()) {
                Some(&v) => it.truth(v)?,
                None => true,
            };
            if !t.is_leaf() && !flag {
                return it.error(
                    "RuntimeError: you can only change requires_grad flags of leaf variables.",
                );
            }
            if let ObjKind::Tensor(t) = it.heap.kind_mut(id) {
                t.requires_grad = flag || t.grad_fn.is_some();
            }
            same(it)
        }
        "backward" => {
            // backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)
            let gradient = a.kw(it, "gradient").or(p.first().copied());
            let retain = match a.kw(it, "retain_graph").or(p.get(1).copied()) {
                None | Some(Value::None) => None,
                Some(v) => Some(it.truth(v)?),
            };
            let create_graph = match a.kw(it, "create_graph").or(p.get(2).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let inputs = a
                .kw(it, "inputs")
                .or(p.get(3).copied())
                .unwrap_or(Value::None);
            let gradient = gradient.unwrap_or(Value::None);
            it.autograd_backward(Value::Obj(id), gradient, retain, create_graph, true, inputs)?;
            Ok(Value::None)
        }
        "item" => {
            if t.numel() != 1 {
                return it.error("RuntimeError: a Tensor with more than one element cannot be converted to Scalar");
            }
            // The model holds no values: a placeholder of the Python type `item()` gives.
            Ok(match t.dtype {
                d if d.is_floating() => Value::Float(0.0),
                Dtype::Bool => Value::Bool(false),
                _ => Value::Int(0),
            })
        }
        "contiguous" if t.contiguous => same(it),
        "contiguous" => {
            // A copy in row-major order (`clone(memory_format=contiguous_format)`).
            let out = op_output(it, t.shape, t.dtype, t.device, &[Value::Obj(id)])?;
            autograd::record(
                it,
                out,
                autograd::row("clone").node,
                GradFlow::PassThrough,
                &[Value::Obj(id)],
                &[],
            );
            Ok(out)
        }
        "clone" => {
            let out = op_output(it, t.shape, t.dtype, t.device, &[Value::Obj(id)])?;
            autograd::record(
                it,
                out,
                autograd::row("clone").node,
                GradFlow::PassThrough,
                &[Value::Obj(id)],
                &[],
            );
            Ok(out)
        }
        "cuda" | "cpu" | "to" | "half" | "float" | "double" | "bfloat16" | "long" | "int"
        | "bool" => {
            let (mut device, mut dtype) = (t.device, t.dtype);
            match method {
                "cuda" => device = DeviceKind::Cuda,
                "cpu" => device = DeviceKind::Cpu,
                "half" => dtype = Dtype::Float16,
                "float" => dtype = Dtype::Float32,
                "double" => dtype = Dtype::Float64,
                "bfloat16" => dtype = Dtype::BFloat16,
                "long" => dtype = Dtype::Int64,
                "int" => dtype = Dtype::Int32,
                "bool" => dtype = Dtype::Bool,
                _ => {
                    for &v in p
                        .iter()
                        .chain(a.kw(it, "device").iter())
                        .chain(a.kw(it, "dtype").iter())
                    {
                        match v {
                            Value::Dtype(d) => dtype = d,
                            Value::Obj(o) => match tensor_of(it, Value::Obj(o)) {
                                Some(other) => {
                                    dtype = other.dtype;
                                    device = other.device;
                                }
                                None => return it.error(
                                    "TypeError: to() received an invalid combination of arguments",
                                ),
                            },
                            other => device = device_of(it, other)?,
                        }
                    }
                }
            }
            if device == t.device && dtype == t.dtype {
                same(it)
            } else {
                let category = it.storages.get(t.storage).category;
                let out = it.new_tensor_as(t.shape, dtype, device, None, category)?;
                autograd::record(
                    it,
                    out,
                    autograd::row("to").node,
                    GradFlow::Compute,
                    &[Value::Obj(id)],
                    &[],
                );
                Ok(out)
            }
        }
        "size" => match p.first() {
            Some(&d) => {
                let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
                Ok(Value::Int(t.shape[d]))
            }
            None => Ok(Value::Obj(it.alloc(ObjKind::Size(t.shape)))),
        },
        "numel" | "nelement" => Ok(Value::Int(t.numel() as i64)),
        "dim" => Ok(Value::Int(t.shape.len() as i64)),
        "element_size" => Ok(Value::Int(t.dtype.element_size() as i64)),
        "type" => crate::python::tensor_type::method(it, id, a),
        m if crate::python::tensor_pieces::is_piece_method(m) => {
            crate::python::tensor_pieces::call(it, id, m, p, a.kw(it, "dim"))
        }
        "add" | "sub" | "mul" | "div" | "pow" | "matmul" | "mm" | "bmm" => {
            let op = match method {
                "add" => Operator::Add,
                "sub" => Operator::Sub,
                "mul" => Operator::Mult,
                "div" => Operator::Div,
                "pow" => Operator::Pow,
                _ => Operator::MatMult,
            };
            let [other] = p.as_slice() else {
                return it.error(format!("TypeError: {method}() expects one argument"));
            };
            tensor_binary(it, op, Value::Obj(id), *other, false)
        }
        m if crate::python::inplace::is_in_place_method(m) => {
            crate::python::inplace::apply(it, id, m, p)
        }
        "relu" | "sigmoid" | "tanh" | "exp" | "log" | "abs" | "neg" | "sqrt" | "clamp"
        | "softmax" | "log_softmax" | "gelu" => tensor_unary(it, id, method),
        "sum" | "mean" => reduce(it, id, method, a.kw(it, "dim").or(p.first().copied())),
        "register_hook" => it.register_tensor_hook(id, p),
        "register_post_accumulate_grad_hook" => it.register_post_accumulate_grad_hook(id, p),
        "norm" => crate::python::ops_more::norm_method(it, id, a),
        "addcmul" => crate::python::ops_more::addcmul_method(it, id, a),
        "unflatten" => crate::python::unflatten::method(it, id, a),
        "logsumexp" => crate::python::select_ops::logsumexp_method(it, id, a),
        "where" => crate::python::select_ops::where_method(it, id, a),
        m if crate::python::index_reductions::is_method(m) => {
            crate::python::index_reductions::method(it, id, m, a)
        }
        m if crate::python::comparisons::is_method(m) => {
            crate::python::comparisons::method(it, id, m, a)
        }
        "remainder" | "floor_divide" | "addcdiv" => {
            crate::python::ops_more::binary_method(it, id, method, a)
        }
        "is_floating_point" => Ok(Value::Bool(t.dtype.is_floating())),
        "numpy" => it.tensor_numpy(id, a),
        m if crate::python::pointwise_math::is_method(m) => {
            crate::python::pointwise_math::method(it, id, m, a)
        }
        "diff" => crate::python::differences::method(it, id, a),
        _ => it.unsupported(format!(
            "tensor method '{method}'{}",
            crate::python::alternatives::for_tensor_method(method)
        )),
    }
}

/// `view`/`reshape` that yields a plain view, read from the tensor's record in place (the
/// general path clones the record, shape vector included, for every method). `None` leaves
/// the rest (a `dtype` argument, a copy for `reshape`, the errors) to the general path, which
/// reaches the same verdict from the same arguments.
fn view_in_place(it: &mut Interpreter<'_>, id: ObjId, p: &[Value]) -> Option<R<Value>> {
    if let [Value::Dtype(_)] = p {
        return None;
    }
    // `view(-1, 4)`: the sizes are read onto the stack, not into a vector.
    let mut stack = [0i64; 8];
    let owned;
    let target: &[i64] = match p {
        _ if p.len() <= stack.len() && p.iter().all(|v| matches!(v, Value::Int(_))) => {
            for (slot, v) in stack.iter_mut().zip(p) {
                if let Value::Int(i) = v {
                    *slot = *i;
                }
            }
            &stack[..p.len()]
        }
        _ => match dims_from(it, p) {
            Ok(target) => {
                owned = target;
                &owned
            }
            Err(e) => return Some(Err(e)),
        },
    };
    let t = tensor_record(it, id);
    match torch::reshape_shape(&t.shape, target) {
        Ok(shape) if t.contiguous || shape == t.shape => Some(view(it, id, shape)),
        _ => None,
    }
}

/// Whether `method` is a tensor method the model implements (by its listing, its keyword
/// table, or its family).
fn tensor_method_known(method: &str) -> bool {
    crate::python::alternatives::TENSOR_METHODS.contains(&method)
        || crate::python::keywords::for_tensor_method(method).is_some()
        || crate::python::inplace::is_in_place_method(method)
        || crate::python::index_reductions::is_method(method)
        || crate::python::pointwise_math::is_method(method)
}
