//! Lambda bodies on the VM: the body expression is compiled once per code object to the
//! same ops as any compiled expression (`compile_expr.rs`), with its names resolved to the
//! lambda's slots, cells and globals, and a call evaluates them (`eval_expr.rs`) instead of
//! walking the tree. A lambda's body is an expression, not a statement: a call runs no
//! per-statement work (line, step budget, finalizers), exactly as the tree walker ran it.

use super::compile::{Compiler, VmCode};
use super::compile_expr::ExprCode;
use crate::heap::Value;
use crate::python::interp::{Interpreter, R};
use ruff_python_ast::Expr;
use std::rc::Rc;

/// Compiles a lambda's body expression: ops `0..exprs.len()` of the returned code.
fn compile_lambda(body: &Expr) -> VmCode<'_> {
    let mut c = Compiler {
        instrs: Vec::new(),
        bound: Vec::new(),
        loops: Vec::new(),
        coroutine: false,
        plain: true,
        plain_depth: 0,
        fblocks: Vec::new(),
        exprs: Vec::new(),
        expr_depth: 0,
        deferred_exits: Vec::new(),
    };
    c.expr_code(body);
    VmCode {
        instrs: c.instrs,
        bound: c.bound,
        async_generator: false,
        exprs: c.exprs,
    }
}

impl<'a> Interpreter<'a> {
    /// Evaluates the body of lambda `code` in the running frame (the call's), compiling it
    /// on the first call.
    pub(in crate::python) fn run_lambda(&mut self, code: u32, body: &'a Expr) -> R<Value> {
        let index = code as usize;
        let vm = match self.plain_codes.get(index) {
            Some(Some(c)) => Rc::clone(c),
            _ => {
                let mut c = compile_lambda(body);
                super::compile_expr::resolve_names(&mut c.exprs, self.codes.get(code));
                let c = Rc::new(c);
                if self.plain_codes.len() <= index {
                    self.plain_codes.resize(index + 1, None);
                }
                self.plain_codes[index] = Some(Rc::clone(&c));
                c
            }
        };
        let whole = ExprCode {
            root: body,
            start: 0,
            end: vm.exprs.len() as u32,
        };
        self.eval_compiled(&vm, whole)
    }
}
