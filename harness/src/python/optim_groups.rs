//! Optimizer parameter groups (PyTorch 2.x `Optimizer.__init__` and `add_param_group`).
//!
//! `optimizer.param_groups` is a list of real dicts, each holding its `params` list and
//! every hyperparameter of the optimizer's `defaults` (set where the group did not give
//! one), so user code can read and write `g['lr']`. The memory-relevant settings of a
//! step (`momentum`, `weight_decay`, `amsgrad`, `foreach`, ...) are read from each group,
//! so two groups of one optimizer create the state and temporaries each group says.
//! `optimizer.state` is a dict keyed by the parameter tensors themselves.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};

/// A default of `defaults`: what PyTorch 2.x's constructors store.
#[derive(Clone, Copy)]
enum Hyperparam {
    Float(f64),
    Bool(bool),
    None,
    Pair(f64, f64),
}

/// The hyperparameters each optimizer puts in `defaults`, with PyTorch 2.x's values (no
/// `lr` is required since PyTorch 2.2 gave `SGD` a default).
fn defaults_of(kind: TorchClass) -> &'static [(&'static str, Hyperparam)] {
    use Hyperparam::{Bool, Float, None, Pair};
    match kind {
        TorchClass::Sgd => &[
            ("lr", Float(1e-3)),
            ("momentum", Float(0.0)),
            ("dampening", Float(0.0)),
            ("weight_decay", Float(0.0)),
            ("nesterov", Bool(false)),
            ("maximize", Bool(false)),
            ("foreach", None),
            ("differentiable", Bool(false)),
            ("fused", None),
        ],
        TorchClass::Adam | TorchClass::AdamW => {
            if kind == TorchClass::AdamW {
                &[
                    ("lr", Float(1e-3)),
                    ("betas", Pair(0.9, 0.999)),
                    ("eps", Float(1e-8)),
                    ("weight_decay", Float(1e-2)),
                    ("amsgrad", Bool(false)),
                    ("foreach", None),
                    ("maximize", Bool(false)),
                    ("capturable", Bool(false)),
                    ("differentiable", Bool(false)),
                    ("fused", None),
                ]
            } else {
                &[
                    ("lr", Float(1e-3)),
                    ("betas", Pair(0.9, 0.999)),
                    ("eps", Float(1e-8)),
                    ("weight_decay", Float(0.0)),
                    ("amsgrad", Bool(false)),
                    ("foreach", None),
                    ("maximize", Bool(false)),
                    ("capturable", Bool(false)),
                    ("differentiable", Bool(false)),
                    ("fused", None),
                ]
            }
        }
        TorchClass::RmsProp => &[
            ("lr", Float(1e-2)),
            ("momentum", Float(0.0)),
            ("alpha", Float(0.99)),
            ("eps", Float(1e-8)),
            ("centered", Bool(false)),
            ("weight_decay", Float(0.0)),
            ("capturable", Bool(false)),
            ("foreach", None),
            ("maximize", Bool(false)),
            ("differentiable", Bool(false)),
        ],
        TorchClass::Adagrad => &[
            ("lr", Float(1e-2)),
            ("lr_decay", Float(0.0)),
            ("eps", Float(1e-10)),
            ("weight_decay", Float(0.0)),
            ("initial_accumulator_value", Float(0.0)),
            ("foreach", None),
            ("maximize", Bool(false)),
            ("differentiable", Bool(false)),
            ("fused", None),
        ],
        _ => &[],
    }
}

impl Interpreter<'_> {
    /// The `defaults` dict of an optimizer: each hyperparameter as given (keyword, or `lr`
    /// as the second positional argument), else PyTorch's default.
    pub(super) fn optimizer_defaults(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> ObjId {
        let defaults = self.alloc(ObjKind::Dict(Vec::new()));
        for &(name, default) in defaults_of(kind) {
            let given = self
                .keyword(kwargs, name)
                .or_else(|| (name == "lr").then(|| args.get(1).copied()).flatten());
            let v = match (given, default) {
                (Some(v), _) => {
                    self.heap.incref(v);
                    v
                }
                (None, Hyperparam::Float(f)) => Value::Float(f),
                (None, Hyperparam::Bool(b)) => Value::Bool(b),
                (None, Hyperparam::None) => Value::None,
                (None, Hyperparam::Pair(a, b)) => {
                    Value::Obj(self.alloc(ObjKind::Tuple(vec![Value::Float(a), Value::Float(b)])))
                }
            };
            let key = Value::Str(self.sym(name));
            self.dict_set(defaults, key, v);
        }
        defaults
    }

    /// `Optimizer.__init__`'s parameter handling: an iterable of tensors becomes one group,
    /// an iterable of dicts one group each, every group through `add_param_group`.
    pub(super) fn install_param_groups(&mut self, opt: ObjId, params: Value) -> R<()> {
        if self.is_tensor(params) {
            return self.error(
                "TypeError: params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.cuda.FloatTensor",
            );
        }
        let items = self.iterable_items(params)?;
        if items.is_empty() {
            return self.error("ValueError: optimizer got an empty parameter list");
        }
        let first_is_dict = items
            .first()
            .and_then(|v| v.obj())
            .is_some_and(|d| matches!(self.heap.kind(d), ObjKind::Dict(_)));
        if first_is_dict {
            for g in items {
                self.add_param_group(opt, g)?;
            }
        } else {
            for &p in &items {
                self.heap.incref(p);
            }
            let list = self.alloc(ObjKind::List(items));
            let group = self.alloc(ObjKind::Dict(Vec::new()));
            let key = Value::Str(self.sym("params"));
            self.dict_set(group, key, Value::Obj(list));
            let r = self.add_param_group(opt, Value::Obj(group));
            self.heap.decref_id(group);
            r?;
        }
        Ok(())
    }

    /// `optimizer.add_param_group(param_group)`: PyTorch's checks, `params` made a list,
    /// the defaults filled in, and the same dict appended to `param_groups`.
    pub(super) fn add_param_group(&mut self, opt: ObjId, group: Value) -> R<()> {
        let dict = group
            .obj()
            .filter(|d| matches!(self.heap.kind(*d), ObjKind::Dict(_)));
        let Some(dict) = dict else {
            let name = self.value_type_name(group);
            return self.error(format!(
                "TypeError: param_group must be a dict, but got {name}"
            ));
        };
        let params_key = self.sym("params");
        let Some(params) = self.dict_str_get(dict, params_key) else {
            return self.error("KeyError: 'params'");
        };
        let params = if self.is_tensor(params) {
            vec![params]
        } else {
            if matches!(
                params.obj().map(|o| self.heap.kind(o)),
                Some(ObjKind::Set { .. })
            ) {
                return self.error(
                    "TypeError: optimizer parameters need to be organized in ordered collections, but the ordering of tensors in sets will change between runs. Please use a list instead.",
                );
            }
            self.iterable_items(params)?
        };
        for &p in &params {
            let Some(t) = self.tensor_data(p) else {
                let name = self.value_type_name(p);
                return self.error(format!(
                    "TypeError: optimizer can only optimize Tensors, but one of the params is {name}"
                ));
            };
            if t.grad_fn.is_some() {
                return self.error("ValueError: can't optimize a non-leaf Tensor");
            }
        }
        for &p in &params {
            self.heap.incref(p);
        }
        let list = self.alloc(ObjKind::List(params.clone()));
        self.dict_set(dict, Value::Str(params_key), Value::Obj(list));
        let defaults = self.optimizer_attr_dict(opt, "defaults")?;
        let entries = match self.heap.kind(defaults) {
            ObjKind::Dict(items) => items.clone(),
            _ => Vec::new(),
        };
        self.heap.decref_id(defaults);
        for (k, v) in entries {
            let Value::Str(name) = k else { continue };
            if self.dict_str_get(dict, name).is_none() {
                self.heap.incref(k);
                self.heap.incref(v);
                self.dict_set(dict, k, v);
            }
        }
        let groups = self.optimizer_attr_dict(opt, "param_groups")?;
        let existing = self.group_list(groups)?;
        for (_, ps) in &existing {
            if ps.iter().any(|p| params.contains(&Value::Obj(*p))) {
                self.heap.decref_id(groups);
                return self
                    .error("ValueError: some parameters appear in more than one parameter group");
            }
        }
        self.heap.incref(Value::Obj(dict));
        if let ObjKind::List(items) = self.heap.kind_mut(groups) {
            items.push(Value::Obj(dict));
        }
        self.heap.decref_id(groups);
        Ok(())
    }

    /// A dict or list attribute of the optimizer (a new reference).
    pub(super) fn optimizer_attr_dict(&mut self, opt: ObjId, name: &str) -> R<ObjId> {
        let s = self.sym(name);
        match self.get_attr(Value::Obj(opt), s)? {
            Value::Obj(d) if matches!(self.heap.kind(d), ObjKind::Dict(_) | ObjKind::List(_)) => {
                Ok(d)
            }
            other => {
                self.heap.decref(other);
                self.error(format!(
                    "TypeError: optimizer.{name} must be a dict or list"
                ))
            }
        }
    }

    /// Each group of a `param_groups` list with its parameters (borrowed).
    pub(super) fn group_list(&mut self, groups: ObjId) -> R<Vec<(ObjId, Vec<ObjId>)>> {
        let items = match self.heap.kind(groups) {
            ObjKind::List(items) => items.clone(),
            _ => return self.error("TypeError: optimizer.param_groups must be a list"),
        };
        let key = self.sym("params");
        let mut out = Vec::new();
        for g in items {
            let Some(d) = g
                .obj()
                .filter(|d| matches!(self.heap.kind(*d), ObjKind::Dict(_)))
            else {
                return self.error("TypeError: a parameter group must be a dict");
            };
            let Some(ps) = self.dict_str_get(d, key) else {
                return self.error("KeyError: 'params'");
            };
            let ps = self.iterable_items(ps)?;
            out.push((d, ps.into_iter().filter_map(|v| v.obj()).collect()));
        }
        Ok(out)
    }

    /// The optimizer's groups with their parameters.
    pub(super) fn optimizer_groups(&mut self, opt: ObjId) -> R<Vec<(ObjId, Vec<ObjId>)>> {
        let groups = self.optimizer_attr_dict(opt, "param_groups")?;
        let r = self.group_list(groups);
        self.heap.decref_id(groups);
        r
    }

    /// `d[name]` of a dict with string keys (borrowed).
    pub(super) fn dict_str_get(&self, d: ObjId, name: Sym) -> Option<Value> {
        match self.heap.kind(d) {
            ObjKind::Dict(items) => items
                .iter()
                .find(|(k, _)| *k == Value::Str(name))
                .map(|(_, v)| *v),
            _ => None,
        }
    }
}
