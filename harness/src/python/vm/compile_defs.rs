//! Compiling the statements and expressions that make objects of code: `import` and
//! `from ... import`, `def` and `async def`, `class`, and lambdas (run by `eval_defs.rs`).
//!
//! Each keeps CPython's order of evaluation, which the tree walker kept too:
//! - `@d1 @d2 def f(a=x, *, b=y)`: the decorators top to bottom, then the positional and
//!   keyword-only defaults in order, then the function is made (`MAKE_FUNCTION`, through the
//!   interpreter's `make_function_from`) and the decorators are applied bottom to top
//!   (`CALL` per decorator), then the name is stored. Annotations are not evaluated (the
//!   model keeps no `__annotations__`; as the tree walker did).
//! - `@d class C(B)`: the decorators, then the base, then the class statement runs
//!   (`__build_class__`: body, class object, counted temporaries) and the decorators are
//!   applied; keywords (`metaclass=`) and several bases are refused, located, after the
//!   decorators were evaluated.
//! - `lambda a=x: ...`: the defaults, then a new function object per evaluation.
//! - `import m`, `from m import n`: one instruction per statement calling the import
//!   machinery (`natives::module_named`) per alias, each stored as it is imported.

use super::compile::{Compiler, Instr};
use super::compile_expr::{Compiled, ExprCode, Op};
use super::compile_stmt::StmtCode;
use crate::heap::Sym;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

/// A compiled `import`, `def` or `class` statement (one [`StmtCode::Def`]).
#[derive(Clone, Copy)]
pub(in crate::python) enum DefStmt<'a> {
    Import(&'a Stmt, &'a ast::StmtImport),
    ImportFrom(&'a Stmt, &'a ast::StmtImportFrom),
    /// `def` or `class`: `value` makes the (decorated) object, stored in `name`.
    Bind {
        stmt: &'a Stmt,
        name: Sym,
        value: ExprCode<'a>,
    },
}

/// The ops of the forms compiled here (one [`Op::Defs`] each).
#[derive(Clone, Copy)]
pub(in crate::python) enum DefOp<'a> {
    /// `@obj.setter`/`@obj.getter`: replaces `obj` on top with the property's bound
    /// accessor, or with its attribute `attr` when it is no property.
    Accessor { attr: Sym, setter: bool, at: u32 },
    /// Pops `defaults` default values (pushed in order) and pushes the new function.
    MakeDef {
        def: &'a ast::StmtFunctionDef,
        defaults: u32,
    },
    MakeLambda {
        lambda: &'a ast::ExprLambda,
        defaults: u32,
    },
    /// Pops the object on top and the `decorators` below it, applies them bottom to top
    /// and pushes the result.
    Decorate { decorators: u32, at: u32 },
    /// A class statement whose `decorators` (and base, when `base`) are on the stack:
    /// runs it and pushes the decorated class.
    Class {
        class: &'a ast::StmtClassDef,
        decorators: u32,
        base: bool,
    },
    /// A class statement with keywords or several bases: refused, located, after its
    /// decorators were evaluated (they are released by the unwinding).
    ClassRefused(&'a ast::StmtClassDef),
}

fn interned(index: &ruff_python_ast::AtomicNodeIndex) -> Option<Sym> {
    index.load().as_u32().map(Sym)
}

fn at(node: &impl Ranged) -> u32 {
    node.range().start().to_u32()
}

impl<'a> Compiler<'a> {
    /// Compiles an `import`, `def` or `class` statement of a plain body; `false` leaves it
    /// a leaf.
    pub(super) fn def_stmt(&mut self, s: &'a Stmt) -> bool {
        let code = match s {
            Stmt::Import(i) => DefStmt::Import(s, i),
            Stmt::ImportFrom(i) => DefStmt::ImportFrom(s, i),
            Stmt::FunctionDef(d) => {
                let Some(name) = interned(&d.name.node_index) else {
                    return false;
                };
                let start = self.here_op();
                self.decorators(&d.decorator_list, true);
                let defaults = self.defaults(Some(&d.parameters));
                self.def_op(DefOp::MakeDef { def: d, defaults });
                self.decorate(d.decorator_list.len(), at(d));
                DefStmt::Bind {
                    stmt: s,
                    name,
                    value: self.code_from(start),
                }
            }
            Stmt::ClassDef(c) => {
                let Some(name) = interned(&c.name.node_index) else {
                    return false;
                };
                let start = self.here_op();
                self.decorators(&c.decorator_list, false);
                let decorators = c.decorator_list.len() as u32;
                match c.arguments.as_deref() {
                    Some(args) if !args.keywords.is_empty() || args.args.len() > 1 => {
                        self.def_op(DefOp::ClassRefused(c));
                    }
                    args => {
                        let base = args.and_then(|a| a.args.first());
                        if let Some(b) = base {
                            self.expr(b);
                        }
                        self.def_op(DefOp::Class {
                            class: c,
                            decorators,
                            base: base.is_some(),
                        });
                    }
                }
                DefStmt::Bind {
                    stmt: s,
                    name,
                    value: self.code_from(start),
                }
            }
            _ => return false,
        };
        self.instrs
            .push(Instr::Compiled(Compiled::Stmt(StmtCode::Def(code))));
        true
    }

    /// Compiles `lambda`; `false` for any other form.
    pub(super) fn expr_defs(&mut self, e: &'a Expr) -> bool {
        let Expr::Lambda(l) = e else {
            return false;
        };
        let defaults = self.defaults(l.parameters.as_deref());
        self.def_op(DefOp::MakeLambda {
            lambda: l,
            defaults,
        });
        true
    }

    fn def_op(&mut self, op: DefOp<'a>) {
        self.exprs.push(Op::Defs(op));
    }

    /// The ops from `start` on as the statement's one expression (`eval_defs::NO_ROOT`).
    fn code_from(&self, start: u32) -> ExprCode<'a> {
        ExprCode {
            root: &super::eval_defs::NO_ROOT,
            start,
            end: self.here_op(),
        }
    }

    /// Decorator expressions, top to bottom. For a `def`, `@x.setter`/`@x.getter` take the
    /// property's accessor (`Interpreter::decorator`).
    fn decorators(&mut self, list: &'a [ast::Decorator], accessors: bool) {
        for dec in list {
            match &dec.expression {
                Expr::Attribute(a)
                    if accessors && matches!(a.attr.as_str(), "setter" | "getter") =>
                {
                    let Some(attr) = interned(&a.attr.node_index) else {
                        self.expr(&dec.expression);
                        continue;
                    };
                    self.expr(&a.value);
                    self.def_op(DefOp::Accessor {
                        attr,
                        setter: a.attr.as_str() == "setter",
                        at: at(a),
                    });
                }
                e => self.expr(e),
            }
        }
    }

    /// The default values (positional-only, positional, keyword-only, in order); how many.
    fn defaults(&mut self, params: Option<&'a ast::Parameters>) -> u32 {
        let Some(params) = params else {
            return 0;
        };
        let mut n = 0;
        for p in params
            .posonlyargs
            .iter()
            .chain(&params.args)
            .chain(&params.kwonlyargs)
        {
            if let Some(d) = &p.default {
                self.expr(d);
                n += 1;
            }
        }
        n
    }

    fn decorate(&mut self, decorators: usize, at: u32) {
        if decorators > 0 {
            self.def_op(DefOp::Decorate {
                decorators: decorators as u32,
                at,
            });
        }
    }
}
