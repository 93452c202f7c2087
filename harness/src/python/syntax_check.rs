//! The compile-time `SyntaxError`s CPython raises on code that parses: `return` or `yield`
//! outside a function, `break` / `continue` outside a loop, `nonlocal` at module level.
//! The parser accepts all of these, so without this check the model would run code that
//! CPython refuses to compile.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

/// The first such error in `module`: its offset in the workload and CPython's message.
pub(super) fn first_error(module: &[Stmt]) -> Option<(u32, &'static str)> {
    let mut check = Check {
        in_function: false,
        in_loop: false,
        at_module: true,
        found: None,
    };
    check.visit_body(module);
    check.found
}

struct Check {
    in_function: bool,
    in_loop: bool,
    /// Directly in the module's body (not in a class or function).
    at_module: bool,
    found: Option<(u32, &'static str)>,
}

impl Check {
    fn report(&mut self, node: &impl Ranged, message: &'static str) {
        if self.found.is_none() {
            self.found = Some((node.range().start().to_u32(), message));
        }
    }

    /// Visits `body` with a new context, then restores the current one.
    fn nested(&mut self, in_function: bool, in_loop: bool, body: &[Stmt]) {
        let saved = (self.in_function, self.in_loop, self.at_module);
        (self.in_function, self.in_loop, self.at_module) = (in_function, in_loop, false);
        self.visit_body(body);
        (self.in_function, self.in_loop, self.at_module) = saved;
    }
}

impl<'a> Visitor<'a> for Check {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found.is_some() {
            return;
        }
        match stmt {
            Stmt::Return(_) if !self.in_function => {
                self.report(stmt, "'return' outside function");
            }
            Stmt::Break(_) if !self.in_loop => self.report(stmt, "'break' outside loop"),
            Stmt::Continue(_) if !self.in_loop => {
                self.report(stmt, "'continue' not properly in loop");
            }
            Stmt::Nonlocal(_) if self.at_module => {
                self.report(stmt, "nonlocal declaration not allowed at module level");
            }
            Stmt::FunctionDef(def) => {
                for decorator in &def.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                self.visit_parameters(&def.parameters);
                if let Some(returns) = &def.returns {
                    self.visit_expr(returns);
                }
                self.nested(true, false, &def.body);
            }
            Stmt::ClassDef(class) => {
                for decorator in &class.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                let in_function = self.in_function;
                self.nested(in_function, false, &class.body);
            }
            Stmt::For(ast::StmtFor {
                target,
                iter,
                body,
                orelse,
                ..
            }) => {
                self.visit_expr(target);
                self.visit_expr(iter);
                self.loop_body(body);
                self.visit_body(orelse);
            }
            Stmt::While(ast::StmtWhile {
                test, body, orelse, ..
            }) => {
                self.visit_expr(test);
                self.loop_body(body);
                self.visit_body(orelse);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() {
            return;
        }
        match expr {
            Expr::Yield(_) | Expr::YieldFrom(_) if !self.in_function => {
                self.report(expr, "'yield' outside function");
            }
            // A lambda's body is a function's: `yield` is allowed there.
            Expr::Lambda(lambda) => {
                if let Some(parameters) = &lambda.parameters {
                    self.visit_parameters(parameters);
                }
                let in_function = self.in_function;
                self.in_function = true;
                self.visit_expr(&lambda.body);
                self.in_function = in_function;
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

impl Check {
    fn loop_body(&mut self, body: &[Stmt]) {
        let in_loop = self.in_loop;
        self.in_loop = true;
        self.visit_body(body);
        self.in_loop = in_loop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(source: &str) -> Option<(u32, &'static str)> {
        let module = ruff_python_parser::parse_module(source)
            .unwrap()
            .into_syntax();
        first_error(&module.body)
    }

    #[test]
    fn statements_cpython_refuses_to_compile() {
        // Messages and offsets as CPython 3.8-3.13 report them.
        assert_eq!(check("return 1"), Some((0, "'return' outside function")));
        assert_eq!(check("x = 1\nbreak"), Some((6, "'break' outside loop")));
        assert_eq!(
            check("continue"),
            Some((0, "'continue' not properly in loop"))
        );
        assert_eq!(
            check("nonlocal x"),
            Some((0, "nonlocal declaration not allowed at module level"))
        );
        assert_eq!(
            check("for i in x:\n  pass\nelse:\n  break"),
            Some((27, "'break' outside loop"))
        );
        assert_eq!(
            check("while 1:\n  class A:\n    break"),
            Some((24, "'break' outside loop"))
        );
        assert_eq!(
            check("while 1:\n  def f():\n    continue"),
            Some((24, "'continue' not properly in loop"))
        );
        assert_eq!(check("yield 1"), Some((0, "'yield' outside function")));
    }

    #[test]
    fn valid_placements_pass() {
        for source in [
            "def f():\n  return 1",
            "for i in x:\n  if i:\n    break\n  continue",
            "while 1:\n  try:\n    break\n  finally:\n    pass",
            "def f():\n  x = 1\n  def g():\n    nonlocal x",
            "def f():\n  yield 1",
            "f = lambda: (yield)",
            "class A:\n  def f(self):\n    return 1",
        ] {
            assert_eq!(check(source), None, "{source}");
        }
    }
}
