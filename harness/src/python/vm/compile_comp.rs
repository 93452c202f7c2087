//! Compiling list, set and dict comprehensions to ops of the expression pool (run by
//! `eval_comp.rs`), so that their loops, `if` clauses and elements run on the VM.
//!
//! A comprehension is inlined into the code that evaluates it, as PEP 709 inlines it from
//! 3.12: its loop variables are names of the enclosing scope that the comprehension
//! shadows (their outer bindings are taken at the start and put back at the end; a loop
//! variable that a nested function captures gets a fresh cell for the comprehension).
//! Up to 3.11 CPython runs a comprehension in a function of its own: the function object
//! is counted when the comprehension begins and freed when it ends, and up to 3.10 the
//! call's frame object (its code's zombie frame) too, exactly as the tree walker counted
//! them (`interp/comprehensions.rs`); the loop variables live in that function's frame,
//! which the shadowing models (they are released when the comprehension ends).
//!
//! `[elt for t1 in it1 if c1 for t2 in it2]` becomes
//! ```text
//!       Begin            count the function, enter the frame, make the container,
//!                        take the targets' outer bindings
//!       <it1> Iter       GET_ITER: the iterable (and its counted iterator) held
//!   L1: Next t1 → END    FOR_ITER: the next item stored in t1, or the loop dropped
//!       <c1> JumpIfFalse L1
//!       <it2> Iter
//!   L2: Next t2 → L1
//!       <elt> Append     LIST_APPEND / SET_ADD / MAP_ADD
//!       Jump L2
//!  END: End              the outer bindings back, the frame left, the function freed
//! ```
//! so the iterables and the element temporaries sit on the value stack, and an error
//! unwinds them, then ends the comprehension, then releases the container
//! (`eval_comp.rs`'s `unwound_to`), the tree walker's order.

use super::compile::Compiler;
use super::compile_expr::Op;
use crate::heap::Sym;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

/// Which comprehension (its node: the key of its code's zombie frame, its generators).
#[derive(Clone, Copy)]
pub(in crate::python) enum Comp<'a> {
    List(&'a ast::ExprListComp),
    Set(&'a ast::ExprSetComp),
    Dict(&'a ast::ExprDictComp),
}

impl<'a> Comp<'a> {
    pub(super) fn generators(self) -> &'a [ast::Comprehension] {
        match self {
            Comp::List(c) => &c.generators,
            Comp::Set(c) => &c.generators,
            Comp::Dict(c) => &c.generators,
        }
    }

    /// The address of the node, which identifies the comprehension's code.
    pub(super) fn node(self) -> usize {
        match self {
            Comp::List(c) => std::ptr::from_ref(c) as usize,
            Comp::Set(c) => std::ptr::from_ref(c) as usize,
            Comp::Dict(c) => std::ptr::from_ref(c) as usize,
        }
    }
}

/// The ops of a compiled comprehension (one [`Op::Comp`] each).
#[derive(Clone, Copy)]
pub(in crate::python) enum CompOp<'a> {
    /// Begins the comprehension and pushes its empty container. `closure`: how many names
    /// of the enclosing function it uses (≤ 3.11 its function's closure tuple holds their
    /// cells), set by `compile_expr::resolve_names` for function bodies.
    Begin { comp: Comp<'a>, closure: u32 },
    /// Pops an iterable and holds it (its iterator) as the innermost loop's.
    Iter,
    /// The innermost loop's next item, stored in `target`; when it is exhausted the loop
    /// is dropped and control goes to `exit`.
    Next { target: &'a Expr, exit: u32 },
    /// Pops the element (a dict's key and value) into the container.
    Append { at: u32 },
    /// Ends the comprehension; its container stays on top as the value.
    End,
}

impl<'a> Compiler<'a> {
    /// Compiles `e` if it is a comprehension whose targets are names; `false` leaves it to
    /// the tree evaluator (which refuses `async for` clauses, located).
    pub(super) fn expr_comp(&mut self, e: &'a Expr) -> bool {
        let comp = match e {
            Expr::ListComp(c) => Comp::List(c),
            Expr::SetComp(c) => Comp::Set(c),
            Expr::DictComp(c) => Comp::Dict(c),
            _ => return false,
        };
        if matches!(e, Expr::DictComp(d) if d.key.is_none()) {
            return false;
        }
        let generators = comp.generators();
        if generators.is_empty()
            || generators
                .iter()
                .any(|g| g.is_async || !names_only(&g.target))
        {
            return false;
        }
        self.comp(CompOp::Begin { comp, closure: 0 });
        let mut exit = None;
        let mut heads = Vec::with_capacity(generators.len());
        for g in generators {
            self.expr(&g.iter);
            self.comp(CompOp::Iter);
            let head = self.here_op();
            heads.push((head as usize, exit));
            self.comp(CompOp::Next {
                target: &g.target,
                exit: 0,
            });
            for condition in &g.ifs {
                self.expr(condition);
                self.exprs.push(Op::JumpIfFalse { target: head });
            }
            exit = Some(head);
        }
        match comp {
            Comp::List(c) => self.expr(&c.elt),
            Comp::Set(c) => self.expr(&c.elt),
            Comp::Dict(c) => {
                self.expr(c.key.as_ref().expect("checked above"));
                self.expr(&c.value);
            }
        }
        self.comp(CompOp::Append {
            at: e.range().start().to_u32(),
        });
        let innermost = exit.expect("one generator at least");
        self.exprs.push(Op::Jump { target: innermost });
        let end = self.here_op();
        for (head, outer) in heads {
            let Op::Comp(CompOp::Next { target, .. }) = self.exprs[head] else {
                unreachable!("a loop head")
            };
            self.exprs[head] = Op::Comp(CompOp::Next {
                target,
                exit: outer.unwrap_or(end),
            });
        }
        self.comp(CompOp::End);
        true
    }

    fn comp(&mut self, op: CompOp<'a>) {
        self.exprs.push(Op::Comp(op));
    }
}

/// How many distinct names of the enclosing function (its locals, cells and free
/// variables in `scopes`) `comp` uses besides its own targets: the size of the closure
/// tuple its function has up to 3.11. The outermost iterable is evaluated outside and does
/// not count. Approximation: names bound by nested comprehensions and lambda parameters
/// anywhere inside are all taken as not the enclosing function's.
pub(in crate::python) fn closure_size(
    comp: Comp<'_>,
    scopes: &rustc_hash::FxHashMap<Sym, crate::python::scope::NameScope>,
) -> u32 {
    use crate::python::scope::NameScope;
    use ruff_python_ast::visitor::{Visitor, walk_expr};
    #[derive(Default)]
    struct Names {
        used: Vec<Option<Sym>>,
        bound: Vec<Option<Sym>>,
    }
    impl<'n> Visitor<'n> for Names {
        fn visit_expr(&mut self, e: &'n Expr) {
            match e {
                Expr::Name(n) => self.used.push(sym(&n.node_index)),
                Expr::Lambda(l) => {
                    if let Some(p) = &l.parameters {
                        self.bound
                            .extend(p.iter().map(|a| sym(&a.name().node_index)));
                    }
                    walk_expr(self, e);
                }
                _ => walk_expr(self, e),
            }
        }
        fn visit_comprehension(&mut self, c: &'n ast::Comprehension) {
            let mut targets = Names::default();
            targets.visit_expr(&c.target);
            self.bound.extend(targets.used);
            ruff_python_ast::visitor::walk_comprehension(self, c);
        }
    }
    let mut names = Names::default();
    for (i, g) in comp.generators().iter().enumerate() {
        let mut targets = Names::default();
        targets.visit_expr(&g.target);
        names.bound.extend(targets.used);
        if i > 0 {
            names.visit_expr(&g.iter);
        }
        g.ifs.iter().for_each(|c| names.visit_expr(c));
    }
    match comp {
        Comp::List(c) => names.visit_expr(&c.elt),
        Comp::Set(c) => names.visit_expr(&c.elt),
        Comp::Dict(c) => {
            c.key.iter().for_each(|k| names.visit_expr(k));
            names.visit_expr(&c.value);
        }
    }
    let mut free: Vec<Sym> = Vec::new();
    for name in names.used.into_iter().flatten() {
        if names.bound.contains(&Some(name)) || free.contains(&name) {
            continue;
        }
        if matches!(
            scopes.get(&name),
            Some(NameScope::Local(_) | NameScope::Cell | NameScope::Free)
        ) {
            free.push(name);
        }
    }
    free.len() as u32
}

fn sym(index: &ruff_python_ast::AtomicNodeIndex) -> Option<Sym> {
    index.load().as_u32().map(Sym)
}

/// A target made of names only (`i`, `(k, v)`, `[a, (b, c)]`), stored without evaluating
/// anything.
fn names_only(target: &Expr) -> bool {
    match target {
        Expr::Name(_) => true,
        Expr::Tuple(t) => t.elts.iter().all(names_only),
        Expr::List(l) => l.elts.iter().all(names_only),
        _ => false,
    }
}
