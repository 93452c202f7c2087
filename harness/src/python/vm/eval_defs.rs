//! Running what `compile_defs.rs` compiles: `import` statements (the import machinery
//! itself, which the tree walker's leaf calls too), `def` and `class` statements, and the
//! ops that make functions and classes.

use super::compile::VmCode;
use super::compile_defs::{DefOp, DefStmt};
use crate::heap::{ObjKind, Value, WrapperKind};
use crate::python::interp::{Interpreter, MAX_EVAL_DEPTH, R};
use crate::python::natives::{self, Native};
use ruff_python_ast as ast;

/// The root node of a `def`/`class` statement's compiled value: never evaluated (the
/// statement checks the evaluation depth itself and runs the tree walker's statement when
/// split nodes are bound), so that [`super::compile_expr::ExprCode`] needs no new field.
pub(super) static NO_ROOT: ast::Expr = ast::Expr::NoneLiteral(ast::ExprNoneLiteral {
    node_index: ast::AtomicNodeIndex::NONE,
    range: ruff_text_size::TextRange::new(
        ruff_text_size::TextSize::new(0),
        ruff_text_size::TextSize::new(0),
    ),
});

impl<'a> Interpreter<'a> {
    /// Runs a compiled `import`, `def` or `class` statement, its per-statement work included.
    pub(super) fn run_def_stmt(&mut self, vm: &VmCode<'a>, code: DefStmt<'a>) -> R<()> {
        match code {
            DefStmt::Import(stmt, i) => {
                self.statement_start(stmt)?;
                self.import_modules(i)?;
            }
            DefStmt::ImportFrom(stmt, i) => {
                self.statement_start(stmt)?;
                self.import_from(i)?;
            }
            DefStmt::Bind { stmt, name, value } => {
                // Values bound to split nodes (`split.rs`) are found by the tree evaluator only.
                if !self.vm_substitutes.is_empty() {
                    return self.exec_leaf(stmt).map(drop);
                }
                self.statement_start(stmt)?;
                if self.eval_depth >= MAX_EVAL_DEPTH {
                    return self.unsupported(format!(
                        "expressions and calls nested deeper than {MAX_EVAL_DEPTH} levels"
                    ));
                }
                let v = self.eval_compiled(vm, value)?;
                self.store_name(name, v);
            }
        }
        self.statement_end()
    }

    /// Runs one op of `compile_defs.rs`; each pushes one value.
    pub(super) fn run_def_op(&mut self, op: DefOp<'a>) -> R<Value> {
        match op {
            DefOp::Accessor { attr, setter, at } => {
                let target = self.expr_stack.pop().expect("a decorator's object");
                if let Value::Obj(p) = target
                    && matches!(
                        self.heap.kind(p),
                        ObjKind::Wrapper(WrapperKind::Property, _)
                    )
                {
                    let n = if setter {
                        Native::PropertySetter
                    } else {
                        Native::PropertyGetter
                    };
                    return Ok(Value::BoundNative(n.id(), p));
                }
                self.offset = at;
                let v = self.get_attr(target, attr);
                self.heap.decref(target);
                v
            }
            DefOp::MakeDef { def, defaults } => {
                let defaults = self.pop_values(defaults);
                let code = self.codes.of_def(def);
                self.make_function_from(code, defaults)
            }
            DefOp::MakeLambda { lambda, defaults } => {
                let defaults = self.pop_values(defaults);
                let code = self.codes.of_lambda(lambda);
                self.make_function_from(code, defaults)
            }
            DefOp::Decorate { decorators, at } => {
                let f = self.expr_stack.pop().expect("the decorated object");
                let decorators = self.pop_values(decorators);
                self.offset = at;
                self.decorate(decorators, f)
            }
            DefOp::Class {
                class,
                decorators,
                base,
            } => {
                let base = base.then(|| self.expr_stack.pop().expect("the base"));
                let decorators = self.pop_values(decorators);
                self.class_statement(class, decorators, base)
            }
            DefOp::ClassRefused(class) => self.refuse_class_arguments(class),
        }
    }

    /// The top `n` values of the value stack, in push order.
    fn pop_values(&mut self, n: u32) -> Vec<Value> {
        let from = self.expr_stack.len() - n as usize;
        self.expr_stack.split_off(from)
    }

    /// `import a.b as c, d`: each module is looked up and bound in turn (`import a.b` binds
    /// `a`); an unknown one is refused, located at its alias.
    pub(in crate::python) fn import_modules(&mut self, i: &'a ast::StmtImport) -> R<()> {
        for alias in &i.names {
            let full = alias.name.as_str();
            let Some(module) = natives::module_named(full) else {
                self.at(alias);
                return self.unsupported(crate::python::constructs::import_of(full));
            };
            let (bound, value) = match &alias.asname {
                Some(a) => (a.as_str(), module),
                None => {
                    let top = full.split('.').next().unwrap_or(full);
                    (top, natives::module_named(top).unwrap_or(module))
                }
            };
            let sym = self.names.intern(bound);
            self.store_name(sym, value);
        }
        Ok(())
    }

    /// `from m import a as b, c`: each name is taken from the module (a submodule, a torch
    /// exception class, a modelled attribute) and bound in turn; an unknown one is refused,
    /// located at its alias.
    pub(in crate::python) fn import_from(&mut self, i: &'a ast::StmtImportFrom) -> R<()> {
        let module_name = i.module.as_ref().map(|m| m.as_str()).unwrap_or("");
        for alias in &i.names {
            let full = format!("{module_name}.{}", alias.name.as_str());
            let attr = self.names.intern(alias.name.as_str());
            let value = natives::module_named(&full)
                .or_else(|| {
                    natives::module_named(module_name)
                        .and_then(|m| self.torch_exception_attr(m, attr))
                })
                .or_else(|| {
                    natives::module_named(module_name)
                        .and_then(|m| self.module_attr(m, alias.name.as_str()))
                });
            let Some(value) = value else {
                self.at(alias);
                return self.unsupported(crate::python::constructs::import_from(
                    module_name,
                    alias.name.as_str(),
                ));
            };
            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
            let sym = self.names.intern(bound.as_str());
            self.heap.incref(value);
            self.store_name(sym, value);
        }
        Ok(())
    }
}
