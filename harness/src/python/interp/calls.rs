//! Function objects, calls and frames, instantiation, and call expressions
//! (`f(...)`, `obj.method(...)`).

use super::{Frame, Interpreter, Locals, R, RECURSION_LIMIT};
use crate::heap::{Attrs, Function, ObjId, ObjKind, Sym, Value};
use crate::python::natives::{self, Native};
use crate::python::scope::{Body, symbol};
use crate::python::small_map::SmallMap;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

impl<'a> Interpreter<'a> {
    // ----- functions ------------------------------------------------------------------------

    /// Creates a function object for `code`: defaults and the closure tuple are built first,
    /// as CPython's `MAKE_FUNCTION` receives them.
    pub(super) fn make_function(
        &mut self,
        code: u32,
        params: Option<&'a ast::Parameters>,
    ) -> R<Value> {
        let mut defaults = Vec::new();
        if let Some(params) = params {
            for p in params
                .posonlyargs
                .iter()
                .chain(&params.args)
                .chain(&params.kwonlyargs)
            {
                if let Some(d) = &p.default {
                    match self.eval(d) {
                        Ok(v) => defaults.push(v),
                        Err(e) => {
                            self.heap.decref_all(defaults);
                            return Err(e);
                        }
                    }
                }
            }
        }
        self.make_function_from(code, defaults)
    }

    /// Creates a function object for `code` with its evaluated `defaults` (owned; released
    /// if the closure cannot be made).
    pub(in crate::python) fn make_function_from(
        &mut self,
        code: u32,
        defaults: Vec<Value>,
    ) -> R<Value> {
        // Shared, so that the free variables are read without copying them per closure.
        let codes = std::rc::Rc::clone(&self.codes);
        let freevars = &codes.get(code).freevars;
        let closure = if freevars.is_empty() {
            None
        } else {
            let mut cells = Vec::with_capacity(freevars.len());
            for &name in freevars {
                let cell = self.frames.last().and_then(|f| f.cells.get(&name).copied());
                let Some(cell) = cell else {
                    self.heap.decref_all(cells);
                    self.heap.decref_all(defaults);
                    return self.error(format!(
                        "NameError: free variable '{}' has no cell",
                        self.names.name(name)
                    ));
                };
                self.heap.incref(Value::Obj(cell));
                cells.push(Value::Obj(cell));
            }
            Some(self.alloc(ObjKind::Tuple(cells)))
        };
        let name = self.codes.get(code).name;
        let f = self.alloc(ObjKind::Function(Function {
            code,
            name,
            closure,
            defaults,
            dict: None,
        }));
        Ok(Value::Obj(f))
    }

    /// Calls any callable with owned arguments; returns a new reference.
    pub(in crate::python) fn call(
        &mut self,
        callee: Value,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let site = self.heap.call_sites.take_site();
        match callee {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Function(f)
                    if f.code == crate::python::optim_step_wrapper::STEP_WRAPPER_CODE =>
                {
                    self.call_step_wrapper(id, args, kwargs)
                }
                ObjKind::Function(_) => self.call_function(id, args, kwargs),
                ObjKind::Class(_) => {
                    // Calling a class is a call into C (`type.__call__`).
                    let result = self.instantiate(id, args, kwargs, site);
                    self.eval_breaker();
                    result
                }
                ObjKind::BoundMethod { func, receiver } => {
                    let (func, receiver) = (*func, *receiver);
                    self.heap.incref(receiver);
                    let all = prepended(receiver, args);
                    if matches!(self.heap.kind(func), ObjKind::Function(_)) {
                        self.call_function(func, all, kwargs)
                    } else {
                        self.call(Value::Obj(func), all, kwargs)
                    }
                }
                ObjKind::Instance { .. } if self.instance_torch_class(callee).is_some() => {
                    self.call_module(id, args, kwargs)
                }
                &ObjKind::Instance { class, .. } => self.call_instance(callee, class, args, kwargs),
                ObjKind::Wrapper(..) => self.call_wrapper(id, args, kwargs),
                other => {
                    let t = other.type_name();
                    self.heap.decref_all(args);
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    self.error(format!("TypeError: '{t}' object is not callable"))
                }
            },
            Value::Native(n) => {
                let result = natives::call(self, n, None, args, kwargs);
                self.eval_breaker();
                result
            }
            Value::BoundNative(n, p) if crate::python::namedtuples::is_bound_native(n) => {
                self.namedtuple_bound_call(n, p, args, kwargs)
            }
            Value::BoundNative(n, p)
                if matches!(
                    Native::from_id(n),
                    Some(Native::PropertySetter | Native::PropertyGetter)
                ) && args.len() == 1
                    && kwargs.is_empty() =>
            {
                let method = if Native::from_id(n) == Some(Native::PropertySetter) {
                    "setter"
                } else {
                    "getter"
                };
                let f = args[0];
                self.property_method(p, method, f)
            }
            _ => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                self.error("TypeError: object is not callable")
            }
        }
    }

    pub(super) fn call_function(
        &mut self,
        func: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let code = f.code;
        let bound = self.bind_arguments(func, args, kwargs)?;
        let (is_generator, is_async) = (
            self.codes.get(code).is_generator,
            self.codes.get(code).is_async,
        );
        if is_generator || is_async {
            // The frame goes into a generator or coroutine object; nothing runs yet.
            let frame = self.build_frame(func, bound);
            return self.new_generator(func, code, frame, is_async);
        }
        self.invoke(func, bound)
    }

    /// Matches arguments to parameters; returns the values in parameter order.
    fn bind_arguments(
        &mut self,
        func: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Vec<Value>> {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let code_index = f.code;
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(code_index);
        let n = code.params.len();
        // The common call: every parameter given by position.
        if kwargs.is_empty()
            && args.len() == n
            && code.vararg.is_none()
            && code.kwarg.is_none()
            && code.params.iter().all(|p| !p.keyword_only)
        {
            return Ok(args);
        }
        self.bind_general(func, args, kwargs)
    }

    /// Runs a function body in a new frame with bound arguments (owned).
    fn invoke(&mut self, func: ObjId, bound: Vec<Value>) -> R<Value> {
        if self.frames.len() > RECURSION_LIMIT {
            self.heap.decref_all(bound);
            return self.error("RecursionError: maximum recursion depth exceeded");
        }
        let mut frame = self.build_frame(func, bound);
        let code_index = frame.code.expect("a function's frame");
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(code_index);
        let uses_zombie = self.enter_frame_object(code_index);
        frame.used_zombie = uses_zombie;
        // The frame holds the function alive while it runs.
        self.heap.incref(Value::Obj(func));
        self.frames.push(frame);
        self.eval_breaker();
        let result = match &code.body {
            Body::Def(d) => self
                .plain_code(code_index, &d.body)
                .and_then(|vm| self.run_plain(&vm)),
            Body::Lambda(l) => self.run_lambda(code_index, &l.body),
        };
        let result = result.map_err(|e| self.unwinding(e));
        let frame = self.frames.pop().expect("pushed above");
        match frame.object {
            // Its frame object settles the ≤ 3.10 frame bookkeeping when it is freed.
            Some(_) => self.retire_frame(frame),
            None => {
                self.release_frame_contents(frame);
                self.leave_frame_object(code_index, uses_zombie);
            }
        }
        self.heap.decref_id(func);
        result
    }

    /// A new frame for a call of `func`: the bound arguments (owned) as locals, its cell
    /// variables' cells and the closure's cells.
    pub(in crate::python) fn build_frame(&mut self, func: ObjId, bound: Vec<Value>) -> Frame {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let (code_index, closure) = (f.code, f.closure);
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(code_index);
        let name = code.name;
        let line = self.frames.last().map_or(0, |f| f.line);
        let buffer = self.spare_locals.pop().unwrap_or_default();
        let mut frame = Frame {
            code: Some(code_index),
            name,
            line,
            object: None,
            used_zombie: false,
            locals: Locals::with_slots(buffer, code.varnames.len()),
            cells: SmallMap::new(),
            class_namespaces: Vec::new(),
        };
        // The parameters hold the first slots, in signature order.
        let mut bound = bound;
        for (slot, v) in bound.drain(..).enumerate() {
            frame.locals.set(slot as u32, v);
        }
        self.spare_argument_vector(bound);
        // Cells first, one allocation each, in CPython's order: a collection inside one of
        // them sees the cells made before it. A parameter that is a cell variable moves in.
        // The order is walked from the code object, not collected into lists per call.
        if !code.cellvars.is_empty() {
            frame.cells = SmallMap::from_entries(self.spare_cells.pop().unwrap_or_default());
            let params = || {
                (code.params.iter().map(|p| p.name))
                    .chain(code.vararg)
                    .chain(code.kwarg)
            };
            let localsplus = self.heap.profile.cells_in_localsplus_order;
            let cell_params = params().filter(|n| localsplus && code.cellvars.contains(n));
            let cell_locals = (code.cellvars.iter().copied())
                .filter(|n| !localsplus || !params().any(|p| p == *n));
            for name in cell_params.chain(cell_locals) {
                // A parameter's slot is emptied into its cell (`None` for a plain cell).
                let contents = params()
                    .position(|p| p == name)
                    .and_then(|slot| frame.locals.take(slot as u32));
                let cell = self.alloc(ObjKind::Cell(contents));
                frame.cells.insert(name, cell);
            }
        }
        if closure.is_some() && frame.cells.is_empty() {
            frame.cells = SmallMap::from_entries(self.spare_cells.pop().unwrap_or_default());
        }
        if let Some(tuple) = closure {
            for (i, &name) in code.freevars.iter().enumerate() {
                let cell = match self.heap.kind(tuple) {
                    ObjKind::Tuple(cells) => cells.get(i).copied(),
                    _ => None,
                };
                if let Some(Value::Obj(cell)) = cell {
                    self.heap.incref(Value::Obj(cell));
                    frame.cells.insert(name, cell);
                }
            }
        }
        frame
    }

    /// ≤ 3.10 frame objects: the code object's zombie frame when one is parked, otherwise
    /// one from the frame free list or a new one (`heap/zombie_frames.rs`). Returns whether
    /// the frame is released through its code's zombie slot: always, for a frame object.
    pub(in crate::python) fn enter_frame_object(&mut self, code: u32) -> bool {
        if !self.heap.profile.frame_objects {
            return false;
        }
        if self.heap.take_frame(code) {
            self.collection_due();
        }
        true
    }

    /// The frame of a call of `code` that returned without its frame object escaping.
    pub(in crate::python) fn leave_frame_object(&mut self, code: u32, used_zombie: bool) {
        if !self.heap.profile.frame_objects {
            return;
        }
        if used_zombie {
            self.heap.release_frame_of(code);
        } else {
            self.heap.release_frame();
        }
    }

    /// Calls a class: an argument tuple (CPython's `tp_call`), the instance, `__init__`.
    /// `site` is the plain `CALL` instruction making the call, if any (3.13+ specialize it).
    fn instantiate(
        &mut self,
        class: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
        site: Option<usize>,
    ) -> R<Value> {
        if self.is_exception_class(class) {
            let r = self.instantiate_exception(class, args, kwargs);
            self.eval_breaker();
            return r;
        }
        if self.is_namedtuple_class(class) {
            return self.namedtuple_call(class, args, kwargs);
        }
        if let Some(v) = self.construct_torch(class, &args, &kwargs)? {
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return Ok(v);
        }
        let specialized = match site {
            Some(site) if self.heap.profile.class_call_without_tuple => {
                let qualifies = kwargs.is_empty() && self.init_specializes(class, args.len());
                self.heap.call_sites.class_call(site, class, qualifies)
            }
            _ => false,
        };
        let tuple_len = if specialized { 0 } else { args.len() };
        self.argument_tuple_begin(tuple_len);
        let attrs = if self.heap.profile.instance_dict_object && !self.instances_without_dict(class)
        {
            Attrs::Dict(None)
        } else {
            Attrs::Inline(Vec::new())
        };
        self.heap.incref(Value::Obj(class));
        let instance = self.alloc(ObjKind::Instance { class, attrs });
        match self.class_lookup(class, self.sym_init) {
            Some(Value::Obj(init)) if matches!(self.heap.kind(init), ObjKind::Function(_)) => {
                self.heap.incref(Value::Obj(instance));
                let all = prepended(Value::Obj(instance), args);
                let result = match self.call_function(init, all, kwargs) {
                    Ok(r) => r,
                    Err(e) => {
                        self.heap.decref_id(instance);
                        return Err(e);
                    }
                };
                if result != Value::None {
                    self.heap.decref(result);
                    self.heap.decref_id(instance);
                    return self.error("TypeError: __init__() should return None");
                }
            }
            Some(Value::Obj(init))
                if matches!(
                    self.heap.kind(init),
                    ObjKind::Wrapper(crate::heap::WrapperKind::DataclassInit, _)
                ) =>
            {
                self.heap.incref(Value::Obj(instance));
                let all = prepended(Value::Obj(instance), args);
                if let Err(e) = self.dataclass_init(init, all, kwargs) {
                    self.heap.decref_id(instance);
                    return Err(e);
                }
            }
            Some(_) => {
                self.heap.decref_id(instance);
                return self.unsupported("a non-function `__init__`");
            }
            None if !args.is_empty() || !kwargs.is_empty() => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                self.heap.decref_id(instance);
                return self.error("TypeError: this class takes no arguments");
            }
            None => {}
        }
        self.argument_tuple_end(tuple_len);
        Ok(Value::Obj(instance))
    }

    /// Whether `specialize_class_call` (Python/specialize.c) turns a call of `class` with
    /// `nargs` positional arguments into `CALL_ALLOC_AND_ENTER_INIT`: `__init__` is a simple
    /// Python function (no `*args`, `**kwargs` or keyword-only parameters: `function_kind`);
    /// on 3.13 it must also take exactly the passed arguments and the instances must have a
    /// managed dict (`get_init_for_simple_managed_python_class`), checks 3.14 dropped.
    fn init_specializes(&self, class: ObjId, nargs: usize) -> bool {
        let Some(Value::Obj(init)) = self.class_lookup(class, self.sym_init) else {
            return false;
        };
        let ObjKind::Function(f) = self.heap.kind(init) else {
            return false;
        };
        let parameters = match &self.codes.get(f.code).body {
            Body::Def(d) => Some(&*d.parameters),
            Body::Lambda(l) => l.parameters.as_deref(),
        };
        let positional = match parameters {
            None => 0,
            Some(p) if p.vararg.is_none() && p.kwarg.is_none() && p.kwonlyargs.is_empty() => {
                p.posonlyargs.len() + p.args.len()
            }
            Some(_) => return false,
        };
        !self.heap.profile.class_call_checks_arguments
            || (positional == nargs + 1 && !self.instances_without_dict(class))
    }

    /// A class call's argument tuple lives from before the instance exists until `__init__`
    /// returns (CPython's `type_call`); it is not kept as an object.
    pub(in crate::python) fn argument_tuple_begin(&mut self, len: usize) {
        if len > 0 && self.heap.count_tuple_allocation(len) {
            self.collection_due();
        }
    }

    pub(in crate::python) fn argument_tuple_end(&mut self, len: usize) {
        if len > 0 {
            self.heap.count_tuple_deallocation(len);
        }
    }

    /// A call into a C function declared `METH_VARARGS | METH_KEYWORDS`, as every `torch.*`
    /// function and `Tensor` method of PyTorch's generated bindings is: CPython packs the
    /// positional arguments into a tuple and the keywords into a dict that live for the call
    /// (`_PyObject_MakeTpCall`, Objects/call.c; `method_vectorcall_VARARGS_KEYWORDS`,
    /// Objects/descrobject.c). Both come from their free lists, so they move the counter only
    /// when something else holds those free lists' objects (a closure's cell tuple, a kept
    /// instance dict). Returns what [`Interpreter::varargs_call_end`] frees.
    pub(in crate::python) fn varargs_call_begin(&mut self, positional: usize, keywords: usize) {
        self.argument_tuple_begin(positional);
        if keywords > 0 && self.heap.count_allocation(&ObjKind::Dict(Vec::new())) {
            self.collection_due();
        }
    }

    /// Frees the tuple and dict of [`Interpreter::varargs_call_begin`], tuple first.
    pub(in crate::python) fn varargs_call_end(&mut self, positional: usize, keywords: usize) {
        self.argument_tuple_end(positional);
        if keywords > 0 {
            self.heap.count_deallocation(&ObjKind::Dict(Vec::new()));
        }
    }

    /// Whether a call of `callee` (or of a method of it) puts a receiver in front of the
    /// arguments: a class (the new instance), a bound method, or a method of an instance.
    fn prepends_receiver(&self, callee: Option<Value>) -> bool {
        match callee {
            Some(Value::Obj(id)) => matches!(
                self.heap.kind(id),
                ObjKind::Class(_) | ObjKind::BoundMethod { .. } | ObjKind::Instance { .. }
            ),
            _ => false,
        }
    }

    pub(super) fn eval_call(&mut self, c: &'a ast::ExprCall) -> R<Value> {
        // `obj.method(...)` calls the method without creating a bound method (LOAD_METHOD).
        let (callee, receiver, method) = match &*c.func {
            Expr::Attribute(a) => {
                let recv = self.eval(&a.value)?;
                let name = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                (None, Some(recv), Some(name))
            }
            other => (Some(self.eval(other)?), None, None),
        };
        // A call that will put `self` (the instance, a bound method's receiver) in front of
        // its arguments gets room for it now, so the argument vector is reused, not copied.
        let extra = usize::from(
            !c.arguments.args.is_empty() && self.prepends_receiver(callee.or(receiver)),
        );
        let mut args = self.argument_vector(c.arguments.args.len() + extra);
        let mut kwargs = Vec::new();
        // An argument that raises drops the callee and the arguments evaluated before it, as
        // CPython's unwinding pops them off the value stack.
        if let Err(e) = self.eval_call_arguments(c, &mut args, &mut kwargs) {
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            if let Some(f) = callee {
                self.heap.decref(f);
            }
            if let Some(r) = receiver {
                self.heap.decref(r);
            }
            return Err(e);
        }
        if let [Expr::Generator(g)] = &*c.arguments.args {
            let receiver = receiver.zip(method);
            return self.call_with_generator(callee, receiver, g, kwargs);
        }
        self.at(c);
        // Refilled in place: the buffer is reused from call to call.
        let mut call_keywords = std::mem::take(&mut self.call_keywords);
        call_keywords.clear();
        call_keywords.extend(c.arguments.keywords.iter().filter_map(|k| {
            let name = k.arg.as_ref()?;
            let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
            Some((sym, k.range().start().to_u32()))
        }));
        self.call_keywords = call_keywords;
        let call_dict =
            c.arguments.keywords.iter().any(|k| k.arg.is_none()) && self.keyword_dict_begin(c);
        let r = match (callee, receiver, method) {
            (Some(f), _, _) => {
                // A plain `CALL` (no `*`, no keywords), which 3.13+ specialize per site.
                if c.arguments.keywords.is_empty()
                    && !c
                        .arguments
                        .args
                        .iter()
                        .any(|a| matches!(a, Expr::Starred(_)))
                {
                    self.heap
                        .call_sites
                        .set_site(c as *const ast::ExprCall as usize);
                }
                let r = self.call(f, args, kwargs);
                self.heap.decref(f);
                r
            }
            (None, Some(recv), Some(name)) => {
                let r = self.call_method(recv, name, args, kwargs);
                self.heap.decref(recv);
                r
            }
            _ => unreachable!("callee or receiver is set"),
        };
        self.keyword_dict_end(call_dict);
        r
    }

    /// Evaluates a call's arguments left to right into `args` and `kwargs` (a lone
    /// generator expression argument is left to [`Interpreter::call_with_generator`]). On an
    /// error, what was evaluated stays in them for the caller to drop.
    fn eval_call_arguments(
        &mut self,
        c: &'a ast::ExprCall,
        args: &mut Vec<Value>,
        kwargs: &mut Vec<(Sym, Value)>,
    ) -> R<()> {
        let generator_argument = matches!(&*c.arguments.args, [Expr::Generator(_)]);
        for a in c.arguments.args.iter() {
            match a {
                _ if generator_argument => {}
                Expr::Starred(s) => {
                    let v = self.eval(&s.value)?;
                    let items = match v {
                        Value::Obj(id) => match self.heap.kind(id) {
                            ObjKind::Tuple(items) | ObjKind::List(items) => items.clone(),
                            _ => {
                                self.heap.decref(v);
                                self.at(a);
                                return self.unsupported("`*` unpacking of this object");
                            }
                        },
                        _ => return self.unsupported("`*` unpacking of this value"),
                    };
                    for item in &items {
                        self.heap.incref(*item);
                    }
                    self.heap.decref(v);
                    args.extend(items);
                }
                _ => {
                    let v = self.eval(a)?;
                    args.push(v);
                }
            }
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                if generator_argument {
                    self.at(k);
                    return self.unsupported("`**` unpacking with a generator argument");
                }
                let mapping = self.eval(&k.value)?;
                self.at(k);
                let items = self.keyword_items(mapping);
                self.heap.decref(mapping);
                self.merge_call_keywords(c, kwargs, items?)?;
                continue;
            };
            let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
            let v = self.eval(&k.value)?;
            kwargs.push((sym, v));
        }
        Ok(())
    }

    /// `recv.name(args)`: a Python method is called directly with `recv` prepended.
    pub(in crate::python) fn call_method(
        &mut self,
        recv: Value,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        if let Value::Obj(id) = recv {
            match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => {
                    let class = *class;
                    if let Some(v) = self.instance_attr(id, name) {
                        self.heap.incref(v);
                        let r = self.call(v, args, kwargs);
                        self.heap.decref(v);
                        return r;
                    }
                    if let Some(kind) = self.torch_class(class) {
                        if kind == crate::python::torchlib::TorchClass::Super {
                            return self.call_super(id, name, args, kwargs);
                        }
                        if self.class_lookup(class, name).is_none() {
                            let method = self.names.name(name).to_string();
                            let r = self.torch_method(id, kind, &method, &args, &kwargs);
                            self.heap.decref_all(args);
                            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                            return match r? {
                                Some(v) => Ok(v),
                                None => {
                                    self.unsupported(format!("method '{method}' of a torch object"))
                                }
                            };
                        }
                    }
                    return match self.class_lookup(class, name) {
                        Some(Value::Obj(f))
                            if matches!(self.heap.kind(f), ObjKind::Function(_)) =>
                        {
                            // Up to 3.10 a method call with keywords is `LOAD_ATTR` and
                            // `CALL_FUNCTION_KW` (`LOAD_METHOD` takes no keywords before 3.11):
                            // a bound method for the call, from 3.8's free list of them
                            // (measured: `c.__call__(1, y=2)` counts 1 on 3.8.18 after
                            // `gc.collect()`, 0 on 3.9+; `tests/gc_schedule_call_slots.rs`).
                            if !kwargs.is_empty()
                                && self.heap.profile.version.minor <= 10
                                && self.heap.count_temporary_method()
                            {
                                self.collection_due();
                            }
                            self.heap.incref(recv);
                            let all = prepended(recv, args);
                            self.call_function(f, all, kwargs)
                        }
                        Some(v) => {
                            let bound = if self.is_wrapper(v) {
                                self.bind_class_attr(v, Some(recv), class)?
                            } else {
                                self.heap.incref(v);
                                v
                            };
                            let r = self.call(bound, args, kwargs);
                            self.heap.decref(bound);
                            r
                        }
                        None => {
                            let cname = self.class_name(class);
                            self.heap.decref_all(args);
                            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                            self.error(format!(
                                "AttributeError: '{cname}' object has no attribute '{}'",
                                self.names.name(name)
                            ))
                        }
                    };
                }
                ObjKind::Class(_)
                    if self.names.name(name) == "apply"
                        && self.torch_class(id)
                            == Some(crate::python::torchlib::TorchClass::Function) =>
                {
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    return self.custom_function_apply(id, args);
                }
                ObjKind::Class(_) => {
                    let f = self.get_attr(recv, name)?;
                    let r = self.call(f, args, kwargs);
                    self.heap.decref(f);
                    return r;
                }
                ObjKind::Exception(_) | ObjKind::Frame(_) => {
                    return self.call_exception_object_method(recv, id, name, args, kwargs);
                }
                &ObjKind::NamedTuple { class, .. } => {
                    return self.namedtuple_method(recv, class, name, args, kwargs);
                }
                _ => {}
            }
        }
        if let Value::Module(_) = recv {
            let f = self.get_attr(recv, name)?;
            let varargs = torch_c_function(recv, f).then_some((args.len(), kwargs.len()));
            if let Some((p, k)) = varargs {
                self.varargs_call_begin(p, k);
            }
            let r = match (f, varargs) {
                // CPython's CALL checks the eval breaker after `_PyObject_MakeTpCall` has freed
                // the argument tuple and keyword dict (Objects/call.c `_PyObject_MakeTpCall`,
                // Python/bytecodes.c CALL → CHECK_EVAL_BREAKER), so the check runs after
                // `varargs_call_end` here, not inside `call`.
                (Value::Native(n), Some(_)) => natives::call(self, n, None, args, kwargs),
                _ => self.call(f, args, kwargs),
            };
            if let Some((p, k)) = varargs {
                self.varargs_call_end(p, k);
                self.eval_breaker();
            }
            self.heap.decref(f);
            return r;
        }
        // `Tensor.backward`, `register_hook`, `split` and `norm` are Python functions in
        // torch/_tensor.py; the other methods are C.
        let python_defined = matches!(
            &*self.names.name_rc(name),
            "backward" | "register_hook" | "split" | "norm"
        );
        let varargs =
            (self.is_tensor(recv) && !python_defined).then_some((args.len(), kwargs.len()));
        if let Some((p, k)) = varargs {
            self.varargs_call_begin(p, k);
        }
        let result = natives::call_method(self, recv, name, args, kwargs);
        if let Some((p, k)) = varargs {
            self.varargs_call_end(p, k);
        }
        self.eval_breaker();
        result
    }
}

/// `first` followed by `rest` (owned), in `rest`'s allocation when it has room.
fn prepended(first: Value, mut rest: Vec<Value>) -> Vec<Value> {
    rest.insert(0, first);
    rest
}

/// Whether `module.attr` is one of torch's C functions (`torch.zeros`, `torch.cat`, the
/// `torch.device` type): the grad-mode managers are Python classes in PyTorch.
fn torch_c_function(module: Value, attr: Value) -> bool {
    let Value::Module(m) = module else {
        return false;
    };
    Native::from_id(m) == Some(Native::ModTorch)
        && matches!(attr, Value::Native(n) if !matches!(
            Native::from_id(n),
            Some(Native::NoGrad | Native::EnableGrad | Native::InferenceMode) | None
        ))
}
