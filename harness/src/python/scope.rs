//! Scope analysis: which names of each function are plain locals, which live in cells
//! (because a nested function reads them) and which are free (read from an enclosing
//! function's cell). CPython decides this at compile time, and it decides how many cell,
//! closure-tuple and function objects a call creates, so the model does the same.

use super::Interner;
use crate::heap::Sym;
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameScope {
    /// A plain local: its slot in [`Code::varnames`].
    Local(u32),
    Cell,
    Free,
    /// Declared `global`.
    Global,
}

/// One parameter of a function.
pub struct Param<'a> {
    pub name: Sym,
    pub default: Option<&'a Expr>,
    pub keyword_only: bool,
}

pub enum Body<'a> {
    Def(&'a ast::StmtFunctionDef),
    Lambda(&'a ast::ExprLambda),
}

/// What the compiler knows about one function or lambda.
pub struct Code<'a> {
    pub name: Sym,
    pub body: Body<'a>,
    pub params: Vec<Param<'a>>,
    /// Leading parameters that are positional-only (before `/`).
    pub posonly: usize,
    /// `*args` and `**kwargs`.
    pub vararg: Option<Sym>,
    pub kwarg: Option<Sym>,
    pub scopes: FxHashMap<Sym, NameScope>,
    /// The plain locals by slot, in CPython's `co_varnames` order: the parameters in
    /// signature order (`*args`, `**kwargs` last), then the other locals in the order the
    /// compiler first meets them in the source. A frame keeps its locals in this order and
    /// releases them in it when it dies (CPython clears `localsplus` front to back). A
    /// parameter that is a cell variable keeps its slot, empty: its value is in the cell.
    pub varnames: Vec<Sym>,
    /// The slots of the parameters that are cell variables, in slot order.
    pub cell_param_slots: Vec<u32>,
    /// Locals that nested functions read: each call creates one cell per name.
    pub cellvars: Vec<Sym>,
    /// Names read from enclosing functions: the function object's closure tuple.
    pub freevars: Vec<Sym>,
    pub is_async: bool,
    /// A `def` whose body suspends (`yield`): calling it makes a generator.
    pub is_generator: bool,
    /// `__qualname__` (PEP 3155): its step in [`Codes::qual_steps`], rendered on demand by
    /// [`Codes::qualname`] (a string per code would make deep nesting quadratic).
    pub qualname: u32,
}

/// One step of a dotted `__qualname__` path: a class or function name under its parent's.
pub struct QualStep {
    parent: Option<u32>,
    name: Sym,
    /// A function's children sit under `<locals>`.
    function: bool,
}

/// Every function and lambda of the workload, found by the address of its AST node.
#[derive(Default)]
pub struct Codes<'a> {
    pub list: Vec<Code<'a>>,
    by_node: FxHashMap<usize, u32>,
    /// Each class statement's name and `__qualname__` step, in source order.
    pub class_qualnames: Vec<(Sym, u32)>,
    /// The steps of every class and function's dotted path.
    pub qual_steps: Vec<QualStep>,
}

impl<'a> Codes<'a> {
    /// The dotted `__qualname__` ending at `step`.
    pub fn qualname(&self, step: u32, names: &Interner) -> String {
        let mut parts = Vec::new();
        let mut at = Some(step);
        while let Some(i) = at {
            let s = &self.qual_steps[i as usize];
            if s.function && !parts.is_empty() {
                parts.push("<locals>");
            }
            parts.push(names.name(s.name));
            at = s.parent;
        }
        parts.reverse();
        parts.join(".")
    }

    fn push_step(&mut self, parent: Option<u32>, name: Sym, function: bool) -> u32 {
        self.qual_steps.push(QualStep {
            parent,
            name,
            function,
        });
        (self.qual_steps.len() - 1) as u32
    }

    pub fn of_def(&self, def: &ast::StmtFunctionDef) -> u32 {
        self.by_node[&(def as *const _ as usize)]
    }
    pub fn of_lambda(&self, lambda: &ast::ExprLambda) -> u32 {
        self.by_node[&(lambda as *const _ as usize)]
    }
    pub fn get(&self, index: u32) -> &Code<'a> {
        &self.list[index as usize]
    }
}

/// Names bound and read directly in one scope, and its nested scopes.
#[derive(Default)]
struct ScopeFacts<'a> {
    bound: FxHashSet<Sym>,
    used: FxHashSet<Sym>,
    /// Every name bound or read, in the order first met (what orders `co_varnames`).
    order: Vec<Sym>,
    seen: FxHashSet<Sym>,
    globals: FxHashSet<Sym>,
    nonlocals: FxHashSet<Sym>,
    children: Vec<Child<'a>>,
}

impl ScopeFacts<'_> {
    fn meet(&mut self, name: Sym) {
        if self.seen.insert(name) {
            self.order.push(name);
        }
    }

    fn bind(&mut self, name: Sym) {
        self.meet(name);
        self.bound.insert(name);
    }

    fn read(&mut self, name: Sym) {
        self.meet(name);
        self.used.insert(name);
    }
}

enum Child<'a> {
    Function(Body<'a>),
    Class(&'a ast::StmtClassDef),
}

/// Analyses the whole module.
pub fn analyze<'a>(module: &'a [Stmt], names: &mut Interner) -> Codes<'a> {
    let mut codes = Codes::default();
    let mut facts = ScopeFacts::default();
    for s in module {
        collect_stmt(s, &mut facts, names);
    }
    let mut enclosing = Enclosing::default();
    for child in facts.children {
        resolve(child, &mut enclosing, &mut codes, names, None);
    }
    codes
}

/// The locals of the enclosing functions, as counts per name: pushing and popping a scope
/// costs its own names only, so deeply nested lambdas stay linear in time and memory.
#[derive(Default)]
struct Enclosing {
    bound: FxHashMap<Sym, u32>,
}

impl Enclosing {
    fn contains(&self, name: &Sym) -> bool {
        self.bound.get(name).is_some_and(|&n| n > 0)
    }

    fn push(&mut self, locals: &FxHashSet<Sym>) {
        for &n in locals {
            *self.bound.entry(n).or_default() += 1;
        }
    }

    fn pop(&mut self, locals: &FxHashSet<Sym>) {
        for n in locals {
            if let Some(count) = self.bound.get_mut(n) {
                *count -= 1;
            }
        }
    }
}

/// Resolves one nested scope; returns the names it needs from enclosing functions.
fn resolve<'a>(
    child: Child<'a>,
    enclosing: &mut Enclosing,
    codes: &mut Codes<'a>,
    names: &mut Interner,
    parent: Option<u32>,
) -> FxHashSet<Sym> {
    match child {
        Child::Class(class) => {
            let name = names.intern(class.name.as_str());
            let step = codes.push_step(parent, name, false);
            codes.class_qualnames.push((name, step));
            let mut facts = ScopeFacts::default();
            for s in &class.body {
                collect_stmt(s, &mut facts, names);
            }
            let mut needs: FxHashSet<Sym> = FxHashSet::default();
            for c in facts.children {
                needs.extend(resolve(c, enclosing, codes, names, Some(step)));
            }
            needs.extend(facts.used.difference(&facts.bound).copied());
            needs.retain(|n| enclosing.contains(n));
            needs
        }
        Child::Function(body) => {
            let mut facts = ScopeFacts::default();
            let (params_ast, name, is_async) = match &body {
                Body::Def(d) => (
                    Some(&*d.parameters),
                    names.intern(d.name.as_str()),
                    d.is_async,
                ),
                Body::Lambda(l) => (l.parameters.as_deref(), names.intern("<lambda>"), false),
            };
            let qualname = codes.push_step(parent, name, true);
            let params = params_ast.map(|p| parameters(p, names)).unwrap_or_default();
            for p in &params {
                facts.bind(p.name);
            }
            let star = |a: &Option<Box<ast::Parameter>>, names: &mut Interner| {
                a.as_ref().map(|p| names.intern(p.name.as_str()))
            };
            let vararg = params_ast.and_then(|p| star(&p.vararg, names));
            let kwarg = params_ast.and_then(|p| star(&p.kwarg, names));
            let posonly = params_ast.map_or(0, |p| p.posonlyargs.len());
            vararg
                .iter()
                .chain(kwarg.iter())
                .for_each(|&n| facts.bind(n));
            match &body {
                Body::Def(d) => d
                    .body
                    .iter()
                    .for_each(|s| collect_stmt(s, &mut facts, names)),
                Body::Lambda(l) => collect_expr(&l.body, &mut facts, names),
            }
            let locals: FxHashSet<Sym> = facts
                .bound
                .iter()
                .filter(|n| !facts.globals.contains(n) && !facts.nonlocals.contains(n))
                .copied()
                .collect();
            enclosing.push(&locals);
            let mut child_needs: FxHashSet<Sym> = FxHashSet::default();
            for c in std::mem::take(&mut facts.children) {
                child_needs.extend(resolve(c, enclosing, codes, names, Some(qualname)));
            }
            enclosing.pop(&locals);
            // CPython's `co_cellvars` order (compile.c `dictbytype`: sorted by name), which is
            // the order a call makes the cells in (see `Interpreter::build_frame`).
            let mut cellvars: Vec<Sym> = locals.intersection(&child_needs).copied().collect();
            cellvars.sort_by(|a, b| names.name(*a).cmp(names.name(*b)));
            let mut free: FxHashSet<Sym> = facts
                .used
                .union(&child_needs)
                .filter(|n| !locals.contains(n) && !facts.globals.contains(n))
                .filter(|n| enclosing.contains(n))
                .copied()
                .collect();
            free.extend(facts.nonlocals.iter().copied());
            let mut freevars: Vec<Sym> = free.iter().copied().collect();
            freevars.sort();
            // Parameters first (they were met first), then the plain locals.
            let varnames: Vec<Sym> = (facts.order.iter().copied())
                .filter(|n| locals.contains(n))
                .filter(|n| !cellvars.contains(n) || params_of(&params, vararg, kwarg, *n))
                .collect();
            let cell_param_slots: Vec<u32> = (0..varnames.len() as u32)
                .filter(|&slot| cellvars.contains(&varnames[slot as usize]))
                .collect();
            let mut scopes = FxHashMap::default();
            for (slot, &n) in varnames.iter().enumerate() {
                scopes.insert(n, NameScope::Local(slot as u32));
            }
            for &n in &cellvars {
                scopes.insert(n, NameScope::Cell);
            }
            for &n in &freevars {
                scopes.insert(n, NameScope::Free);
            }
            for &n in &facts.globals {
                scopes.insert(n, NameScope::Global);
            }
            let node = match &body {
                Body::Def(d) => *d as *const _ as usize,
                Body::Lambda(l) => *l as *const _ as usize,
            };
            let is_generator = match &body {
                Body::Def(d) => super::vm::is_generator_body(&d.body),
                Body::Lambda(_) => false,
            };
            codes.by_node.insert(node, codes.list.len() as u32);
            codes.list.push(Code {
                name,
                body,
                params,
                posonly,
                vararg,
                kwarg,
                scopes,
                varnames,
                cell_param_slots,
                cellvars,
                freevars: freevars.clone(),
                is_async,
                is_generator,
                qualname,
            });
            free
        }
    }
}

/// Whether `name` is one of a function's parameters.
fn params_of(params: &[Param<'_>], vararg: Option<Sym>, kwarg: Option<Sym>, name: Sym) -> bool {
    params.iter().any(|p| p.name == name) || vararg == Some(name) || kwarg == Some(name)
}

fn parameters<'a>(p: &'a ast::Parameters, names: &mut Interner) -> Vec<Param<'a>> {
    let positional = p
        .posonlyargs
        .iter()
        .chain(p.args.iter())
        .map(|a| (a, false));
    let keyword = p.kwonlyargs.iter().map(|a| (a, true));
    let mut out = Vec::new();
    for (a, keyword_only) in positional.chain(keyword) {
        out.push(Param {
            name: names.intern(a.parameter.name.as_str()),
            default: a.default.as_deref(),
            keyword_only,
        });
    }
    out
}

fn bind_target<'a>(target: &'a Expr, facts: &mut ScopeFacts<'a>, names: &mut Interner) {
    match target {
        Expr::Name(n) => facts.bind(names.intern(n.id.as_str())),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| bind_target(e, facts, names)),
        Expr::List(t) => t.elts.iter().for_each(|e| bind_target(e, facts, names)),
        Expr::Starred(s) => bind_target(&s.value, facts, names),
        other => collect_expr(other, facts, names),
    }
}

fn collect_body<'a>(body: &'a [Stmt], facts: &mut ScopeFacts<'a>, names: &mut Interner) {
    body.iter().for_each(|s| collect_stmt(s, facts, names));
}

fn collect_stmt<'a>(stmt: &'a Stmt, facts: &mut ScopeFacts<'a>, names: &mut Interner) {
    match stmt {
        Stmt::FunctionDef(d) => {
            // Decorators are evaluated first, then defaults; the name is stored last.
            for dec in &d.decorator_list {
                collect_expr(&dec.expression, facts, names);
            }
            for p in d
                .parameters
                .posonlyargs
                .iter()
                .chain(&d.parameters.args)
                .chain(&d.parameters.kwonlyargs)
            {
                if let Some(default) = &p.default {
                    collect_expr(default, facts, names);
                }
            }
            facts.bind(names.intern(d.name.as_str()));
            facts.children.push(Child::Function(Body::Def(d)));
        }
        Stmt::ClassDef(c) => {
            for dec in &c.decorator_list {
                collect_expr(&dec.expression, facts, names);
            }
            if let Some(args) = &c.arguments {
                args.args.iter().for_each(|a| collect_expr(a, facts, names));
            }
            facts.bind(names.intern(c.name.as_str()));
            facts.children.push(Child::Class(c));
        }
        Stmt::Return(r) => r.value.iter().for_each(|v| collect_expr(v, facts, names)),
        Stmt::Delete(d) => d.targets.iter().for_each(|t| bind_target(t, facts, names)),
        Stmt::Assign(a) => {
            collect_expr(&a.value, facts, names);
            a.targets.iter().for_each(|t| bind_target(t, facts, names));
        }
        Stmt::AugAssign(a) => {
            // The target is read before the value is evaluated.
            collect_expr(&a.target, facts, names);
            collect_expr(&a.value, facts, names);
            bind_target(&a.target, facts, names);
        }
        Stmt::AnnAssign(a) => {
            a.value.iter().for_each(|v| collect_expr(v, facts, names));
            bind_target(&a.target, facts, names);
        }
        Stmt::For(f) => {
            collect_expr(&f.iter, facts, names);
            bind_target(&f.target, facts, names);
            collect_body(&f.body, facts, names);
            collect_body(&f.orelse, facts, names);
        }
        Stmt::While(w) => {
            collect_expr(&w.test, facts, names);
            collect_body(&w.body, facts, names);
            collect_body(&w.orelse, facts, names);
        }
        Stmt::If(i) => {
            collect_expr(&i.test, facts, names);
            collect_body(&i.body, facts, names);
            for clause in &i.elif_else_clauses {
                clause
                    .test
                    .iter()
                    .for_each(|t| collect_expr(t, facts, names));
                collect_body(&clause.body, facts, names);
            }
        }
        Stmt::With(w) => {
            for item in &w.items {
                collect_expr(&item.context_expr, facts, names);
                if let Some(v) = &item.optional_vars {
                    bind_target(v, facts, names);
                }
            }
            collect_body(&w.body, facts, names);
        }
        Stmt::Import(i) => {
            for alias in &i.names {
                let bound = alias.asname.as_ref().map_or_else(
                    || alias.name.as_str().split('.').next().unwrap_or_default(),
                    |a| a.as_str(),
                );
                facts.bind(names.intern(bound));
            }
        }
        Stmt::ImportFrom(i) => {
            for alias in &i.names {
                let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                facts.bind(names.intern(bound.as_str()));
            }
        }
        Stmt::Global(g) => {
            for n in &g.names {
                facts.globals.insert(names.intern(n.as_str()));
            }
        }
        Stmt::Nonlocal(n) => {
            for n in &n.names {
                facts.nonlocals.insert(names.intern(n.as_str()));
            }
        }
        Stmt::Expr(e) => collect_expr(&e.value, facts, names),
        Stmt::Raise(r) => {
            r.exc.iter().for_each(|e| collect_expr(e, facts, names));
            r.cause.iter().for_each(|e| collect_expr(e, facts, names));
        }
        Stmt::Try(t) => {
            collect_body(&t.body, facts, names);
            for handler in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = handler;
                h.type_.iter().for_each(|e| collect_expr(e, facts, names));
                if let Some(name) = &h.name {
                    facts.bind(names.intern(name.as_str()));
                }
                collect_body(&h.body, facts, names);
            }
            collect_body(&t.orelse, facts, names);
            collect_body(&t.finalbody, facts, names);
        }
        Stmt::Assert(a) => {
            collect_expr(&a.test, facts, names);
            a.msg.iter().for_each(|m| collect_expr(m, facts, names));
        }
        // The interpreter rejects what it does not run; nothing to bind here.
        _ => {}
    }
}

fn collect_expr<'a>(expr: &'a Expr, facts: &mut ScopeFacts<'a>, names: &mut Interner) {
    use ruff_python_ast::visitor::{Visitor, walk_expr};
    struct Collect<'f, 'a, 'n> {
        facts: &'f mut ScopeFacts<'a>,
        names: &'n mut Interner,
    }
    impl<'a> Visitor<'a> for Collect<'_, 'a, '_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Name(n) => {
                    let sym = self.names.intern(n.id.as_str());
                    if n.ctx.is_load() {
                        self.facts.read(sym);
                    } else {
                        self.facts.bind(sym);
                    }
                }
                Expr::Lambda(l) => {
                    if let Some(p) = &l.parameters {
                        for a in p.posonlyargs.iter().chain(&p.args).chain(&p.kwonlyargs) {
                            if let Some(d) = &a.default {
                                self.visit_expr(d);
                            }
                        }
                    }
                    self.facts.children.push(Child::Function(Body::Lambda(l)));
                }
                _ => walk_expr(self, expr),
            }
        }
    }
    Collect { facts, names }.visit_expr(expr);
}

/// Interns every identifier and string constant of the module once, storing its symbol in
/// the node's index slot, so that evaluation reads a symbol instead of hashing a string.
pub fn intern_identifiers(module: &[Stmt], names: &mut Interner) {
    use ruff_python_ast::visitor::{Visitor, walk_expr, walk_keyword, walk_stmt};
    use ruff_python_ast::{AtomicNodeIndex, NodeIndex};
    struct Pass<'n> {
        names: &'n mut Interner,
    }
    impl Pass<'_> {
        fn mark(&mut self, index: &AtomicNodeIndex, text: &str) {
            let sym = self.names.intern(text);
            index.set(NodeIndex::from(sym.0));
        }
    }
    impl<'a> Visitor<'a> for Pass<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(d) => self.mark(&d.name.node_index, d.name.as_str()),
                Stmt::ClassDef(c) => self.mark(&c.name.node_index, c.name.as_str()),
                _ => {}
            }
            walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Name(n) => self.mark(&n.node_index, n.id.as_str()),
                Expr::Attribute(a) => self.mark(&a.attr.node_index, a.attr.as_str()),
                Expr::StringLiteral(s) => self.mark(&s.node_index, s.value.to_str()),
                _ => {}
            }
            walk_expr(self, expr);
        }
        fn visit_keyword(&mut self, keyword: &'a ast::Keyword) {
            if let Some(arg) = &keyword.arg {
                self.mark(&arg.node_index, arg.as_str());
            }
            walk_keyword(self, keyword);
        }
    }
    let mut pass = Pass { names };
    for stmt in module {
        pass.visit_stmt(stmt);
    }
}

/// The symbol [`intern_identifiers`] stored in a node, or the text interned now.
pub fn symbol(index: &ruff_python_ast::AtomicNodeIndex, text: &str, names: &mut Interner) -> Sym {
    match index.load().as_u32() {
        Some(i) => Sym(i),
        None => names.intern(text),
    }
}
