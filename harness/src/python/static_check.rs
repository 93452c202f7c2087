//! The static pre-run pass: walks the whole workload before any variant runs and reports
//! every construct the model refuses (from [`super::constructs`]) and every import or module
//! attribute it cannot resolve, each located, all at once. Without it such code is found
//! only when its line runs, so a variant can pass while another branch holds code the tool
//! cannot run.
//!
//! The pass is conservative: it reports only what the evaluator refuses whenever it runs
//! it. Module names are resolved by the evaluator's own lookups (a throwaway interpreter
//! with nothing run), and only for names bound by imports alone (or preloaded, like
//! `torch`) and never rebound anywhere in the workload. What depends on values (a context
//! manager's type, a dict key, an int's size) is left to the run.

use super::constructs::{self, Construct};
use super::natives;
use super::{Interpreter, SourceMap};
use crate::error::{Error, InputErrorKind};
use crate::heap::Value;
use crate::scenario::Scenario;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::Ranged;
use rustc_hash::{FxHashMap, FxHashSet};

/// One refused construct or name: its offset in the workload and what it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub offset: u32,
    pub what: String,
}

/// Checks a scenario's workload: `Ok` when the pass finds nothing, otherwise every finding
/// as one located `unsupported` error each. A replay scenario has no workload to check.
pub fn check_scenario(scenario: &Scenario) -> Result<(), Error> {
    if scenario.replay.is_some() {
        return Ok(());
    }
    let module = super::parse(&scenario.workload, &scenario.file)?;
    check_module(&module.body, scenario)
}

/// [`check_scenario`] on a workload already parsed. Every run checks it too, so that a
/// library caller of `run::run_variant` gets the same located refusal as the harness,
/// whichever branch the variant takes (a refused construct in a branch that this variant
/// skips is still refused, as `cargo gpumem test` refuses it).
pub fn check_module(module: &[Stmt], scenario: &Scenario) -> Result<(), Error> {
    let predefined: Vec<&str> = scenario.vary.iter().map(|(n, _)| n.as_str()).collect();
    let findings = findings(module, scenario, &predefined);
    if findings.is_empty() {
        return Ok(());
    }
    let map = SourceMap::new(&scenario.workload, &scenario.file);
    let mut errors: Vec<Error> = findings
        .into_iter()
        .map(|f| Error::input(InputErrorKind::Unsupported, map.location(f.offset), f.what))
        .collect();
    Err(if errors.len() == 1 {
        errors.remove(0)
    } else {
        Error::Several(errors)
    })
}

/// Every finding in `module`, in source order; `predefined` are names bound before the run
/// (the `vary` variables).
pub fn findings(module: &[Stmt], scenario: &Scenario, predefined: &[&str]) -> Vec<Finding> {
    let map = SourceMap::new(&scenario.workload, &scenario.file);
    let mut resolver = Interpreter::new(
        &[],
        map,
        scenario.python.version,
        &scenario.python.start,
        scenario.device.capacity,
    );
    let mut bindings = Bindings::default();
    for name in predefined {
        bindings.other.insert((*name).to_string());
    }
    bindings.visit_body(module);
    let modules = bindings.module_names(&mut resolver);
    let mut pass = Pass {
        resolver,
        modules,
        findings: Vec::new(),
        subscript_depth: 0,
        in_sync_def: false,
        in_async_def: false,
    };
    pass.visit_body(module);
    let mut findings = pass.findings;
    findings.sort();
    findings.dedup();
    findings
}

/// What each identifier of the workload is bound to anywhere in it.
#[derive(Default)]
struct Bindings {
    /// Names bound by `import`: the modules (by dotted name) they were bound to.
    imports: FxHashMap<String, Vec<String>>,
    /// Names bound any other way (assigned, a parameter, a `def`, ...).
    other: FxHashSet<String>,
}

impl Bindings {
    /// Names that hold one module wherever they are used, with that module.
    fn module_names(&self, resolver: &mut Interpreter<'_>) -> FxHashMap<String, Value> {
        let mut out = FxHashMap::default();
        for (name, value) in natives::preloaded_globals() {
            if !self.other.contains(name) && !self.imports.contains_key(name) {
                out.insert(name.to_string(), value);
            }
        }
        for (name, modules) in &self.imports {
            if self.other.contains(name) {
                continue;
            }
            let values: Vec<Option<Value>> = modules
                .iter()
                .map(|m| resolve_dotted(resolver, m))
                .collect();
            if let Some(Some(first)) = values.first()
                && values.iter().all(|v| *v == Some(*first))
            {
                out.insert(name.clone(), *first);
            }
        }
        out
    }

    fn bind_other(&mut self, name: &str) {
        self.other.insert(name.to_string());
    }
}

/// A module's value by its dotted name, as `import` binds it (`torch.nn` → `torch.nn`),
/// or `None` when the name is not a modelled module.
fn resolve_dotted(resolver: &mut Interpreter<'_>, dotted: &str) -> Option<Value> {
    natives::module_named(dotted)
        .filter(|v| matches!(v, Value::Module(_)))
        .or_else(|| {
            let (module, attr) = dotted.rsplit_once('.')?;
            let m = resolve_dotted(resolver, module)?;
            resolver
                .static_module_attr(m, attr)
                .filter(|v| matches!(v, Value::Module(_)))
        })
}

impl<'a> Visitor<'a> for Bindings {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(i) => {
                for alias in &i.names {
                    let full = alias.name.as_str();
                    // As the evaluator binds it: `import a.b` binds `a` to `a`, `import a.b
                    // as c` binds `c` to `a.b`.
                    let (bound, module) = match &alias.asname {
                        Some(a) => (a.as_str(), full),
                        None => {
                            let top = full.split('.').next().unwrap_or(full);
                            (
                                top,
                                if natives::module_named(top).is_some() {
                                    top
                                } else {
                                    full
                                },
                            )
                        }
                    };
                    self.imports
                        .entry(bound.to_string())
                        .or_default()
                        .push(module.to_string());
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map_or("", |m| m.as_str());
                for alias in &i.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                    self.imports
                        .entry(bound.to_string())
                        .or_default()
                        .push(format!("{module}.{}", alias.name.as_str()));
                }
            }
            Stmt::FunctionDef(d) => {
                self.bind_other(d.name.as_str());
                visitor::walk_stmt(self, stmt);
            }
            Stmt::ClassDef(c) => {
                self.bind_other(c.name.as_str());
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr
            && n.ctx != ExprContext::Load
        {
            self.bind_other(n.id.as_str());
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_parameter(&mut self, parameter: &'a ast::Parameter) {
        self.bind_other(parameter.name.as_str());
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &h.name {
            self.bind_other(name.as_str());
        }
        visitor::walk_except_handler(self, handler);
    }

    fn visit_pattern(&mut self, pattern: &'a ast::Pattern) {
        // `match` is refused anyway; its captures still bind names.
        match pattern {
            ast::Pattern::MatchAs(ast::PatternMatchAs {
                name: Some(name), ..
            })
            | ast::Pattern::MatchStar(ast::PatternMatchStar {
                name: Some(name), ..
            }) => self.bind_other(name.as_str()),
            ast::Pattern::MatchMapping(ast::PatternMatchMapping {
                rest: Some(name), ..
            }) => self.bind_other(name.as_str()),
            _ => {}
        }
        visitor::walk_pattern(self, pattern);
    }
}

/// The checking walk.
struct Pass<'r> {
    resolver: Interpreter<'r>,
    /// Names that hold a module everywhere in the workload.
    modules: FxHashMap<String, Value>,
    findings: Vec<Finding>,
    /// Inside a subscript's index, where `...` is an index item.
    subscript_depth: u32,
    /// Directly inside a (non-async) `def` body, where the workload VM's compiler, not this
    /// pass, judges each `yield`.
    in_sync_def: bool,
    /// Directly inside an `async def` body, whose `async for`/`async with` the workload
    /// VM compiles.
    in_async_def: bool,
}

/// How far an attribute chain resolved.
enum Chain {
    Module(Value),
    Other,
}

impl Pass<'_> {
    fn report(&mut self, node: &impl Ranged, what: impl Into<String>) {
        self.findings.push(Finding {
            offset: node.range().start().to_u32(),
            what: what.into(),
        });
    }

    /// Reports `construct` at `node` when the table says the model refuses it.
    fn refused(&mut self, node: &impl Ranged, construct: Construct) {
        if construct.refused() {
            self.report(node, construct.what());
        }
    }

    /// Resolves `a.b.c` while it names modules, reporting the first attribute the model
    /// lacks; visits whatever is not a module chain.
    fn chain(&mut self, expr: &Expr) -> Chain {
        match expr {
            Expr::Name(n) if n.ctx == ExprContext::Load => match self.modules.get(n.id.as_str()) {
                Some(v) => Chain::Module(*v),
                None => Chain::Other,
            },
            Expr::Attribute(a) if a.ctx == ExprContext::Load => {
                let Chain::Module(m) = self.chain(&a.value) else {
                    return Chain::Other;
                };
                let attr = a.attr.as_str();
                match self.resolver.static_module_attr(m, attr) {
                    Some(v @ Value::Module(_)) => Chain::Module(v),
                    Some(_) => Chain::Other,
                    None => {
                        let hint = self.resolver.module_attr_hint(m, attr);
                        let what = constructs::module_attribute(
                            natives::module_display_of(m),
                            attr,
                            &hint,
                        );
                        self.report(expr, what);
                        Chain::Other
                    }
                }
            }
            other => {
                self.visit_expr(other);
                Chain::Other
            }
        }
    }

    fn check_import(&mut self, i: &ast::StmtImport) {
        for alias in &i.names {
            let full = alias.name.as_str();
            if natives::module_named(full).is_none() {
                self.report(alias, constructs::import_of(full));
            }
        }
    }

    /// `from m import a`, resolved as the evaluator resolves it.
    fn check_import_from(&mut self, i: &ast::StmtImportFrom) {
        let module_name = i.module.as_ref().map_or("", |m| m.as_str());
        for alias in &i.names {
            let name = alias.name.as_str();
            let full = format!("{module_name}.{name}");
            let found = natives::module_named(&full).is_some()
                || natives::module_named(module_name)
                    .and_then(|m| self.resolver.static_module_attr(m, name))
                    .is_some();
            if !found {
                self.report(alias, constructs::import_from(module_name, name));
            }
        }
    }
}

impl<'a> Visitor<'a> for Pass<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Match(_) => return self.refused(stmt, Construct::Match),
            Stmt::TypeAlias(_) => return self.refused(stmt, Construct::TypeAliases),
            Stmt::IpyEscapeCommand(_) => return self.refused(stmt, Construct::IpythonEscapes),
            Stmt::For(f) if f.is_async && !self.in_async_def => {
                self.refused(stmt, Construct::AsyncFor)
            }
            Stmt::With(w) if w.is_async && !self.in_async_def => {
                self.refused(stmt, Construct::AsyncWith)
            }
            Stmt::Try(t) if t.is_star => self.refused(stmt, Construct::ExceptStar),
            Stmt::Import(i) => self.check_import(i),
            Stmt::ImportFrom(i) => self.check_import_from(i),
            Stmt::FunctionDef(d) => {
                // A generator body is judged by the compiler that will run it, in its words.
                let generator = super::vm::is_generator_body(&d.body);
                if (d.is_async || generator)
                    && let Err(refusal) = super::vm::compile(&d.body, d.is_async)
                {
                    self.findings.push(Finding {
                        offset: refusal.offset,
                        what: refusal.construct.to_string(),
                    });
                }
                let outer = std::mem::replace(&mut self.in_sync_def, !d.is_async);
                let outer_async = std::mem::replace(&mut self.in_async_def, d.is_async);
                visitor::walk_stmt(self, stmt);
                self.in_sync_def = outer;
                self.in_async_def = outer_async;
                return;
            }
            Stmt::ClassDef(c) => {
                if let Some(args) = &c.arguments
                    && (!args.keywords.is_empty() || args.args.len() > 1)
                {
                    self.refused(&**args, Construct::ClassKeywordsOrBases);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Attribute(a) => {
                if a.ctx == ExprContext::Load {
                    self.chain(expr);
                } else {
                    self.chain(&a.value);
                }
                return;
            }
            Expr::Subscript(s) => {
                self.visit_expr(&s.value);
                self.subscript_depth += 1;
                self.visit_expr(&s.slice);
                self.subscript_depth -= 1;
                return;
            }
            Expr::Call(c) => {
                self.visit_expr(&c.func);
                // A generator expression runs as the only positional argument of a call.
                for (i, arg) in c.arguments.args.iter().enumerate() {
                    match arg {
                        Expr::Generator(g) if i == 0 && c.arguments.args.len() == 1 => {
                            if let Some(g) = g.generators.iter().find(|g| g.is_async) {
                                self.refused(g, Construct::AsyncComprehensions);
                            }
                            visitor::walk_expr(self, arg);
                        }
                        _ => self.visit_expr(arg),
                    }
                }
                for keyword in &c.arguments.keywords {
                    self.visit_expr(&keyword.value);
                }
                return;
            }
            Expr::Generator(_) => self.refused(expr, Construct::GeneratorExpressions),
            // An `async def` body's `yield` makes an async generator, compiled by the VM.
            Expr::Yield(_) if self.in_async_def => {}
            Expr::Yield(_) | Expr::YieldFrom(_) if !self.in_sync_def => {
                self.refused(expr, Construct::Generators)
            }
            Expr::BytesLiteral(_) => self.refused(expr, Construct::BytesLiterals),
            Expr::TString(_) => self.refused(expr, Construct::TemplateStrings),
            Expr::IpyEscapeCommand(_) => self.refused(expr, Construct::IpythonEscapes),
            Expr::EllipsisLiteral(_) if self.subscript_depth == 0 => {
                self.refused(expr, Construct::Ellipsis)
            }
            Expr::NumberLiteral(n) if matches!(n.value, ast::Number::Complex { .. }) => {
                self.refused(expr, Construct::ComplexNumbers)
            }
            Expr::ListComp(ast::ExprListComp { generators, .. })
            | Expr::DictComp(ast::ExprDictComp { generators, .. })
            | Expr::SetComp(ast::ExprSetComp { generators, .. }) => {
                if let Some(g) = generators.iter().find(|g| g.is_async) {
                    self.refused(g, Construct::AsyncComprehensions);
                }
            }
            // A lambda's body, like a function's, is outside any subscript.
            Expr::Lambda(_) => {
                let depth = std::mem::take(&mut self.subscript_depth);
                let outer = std::mem::replace(&mut self.in_sync_def, false);
                let outer_async = std::mem::replace(&mut self.in_async_def, false);
                visitor::walk_expr(self, expr);
                self.subscript_depth = depth;
                self.in_sync_def = outer;
                self.in_async_def = outer_async;
                return;
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }

    /// Annotations are not evaluated by the model.
    fn visit_annotation(&mut self, _expr: &'a Expr) {}
}

impl Interpreter<'_> {
    /// `module.attr` as a workload's attribute access resolves it, without running anything.
    pub(super) fn static_module_attr(&mut self, m: Value, attr: &str) -> Option<Value> {
        let sym = self.names.intern(attr);
        self.torch_exception_attr(m, sym)
            .or_else(|| self.module_attr(m, attr))
    }

    /// The evaluator's hint at the nearest supported name.
    fn module_attr_hint(&self, m: Value, attr: &str) -> String {
        super::alternatives::for_module_attr(self, m, attr)
    }
}
