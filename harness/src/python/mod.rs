//! The workload interpreter: runs a subset of Python on the object heap.
//!
//! Workloads are parsed with ruff's Python parser and walked directly. The interpreter
//! follows CPython's evaluation order and its object inventory (what each construct
//! allocates on the GC heap, per version), because both decide when the cycle collector
//! runs and what is alive at that moment. It never computes tensor values.
//!
//! What it cannot run it rejects with the scenario file, line and column and the name of
//! the construct.

mod activations;
pub(crate) mod allocator_settings;
mod alternatives;
mod amp;
mod attention;
mod attention_masks;
mod autograd;
mod autograd_internal;
mod autograd_record;
mod autograd_saved;
pub mod budget;
mod builtin_calls;
mod builtin_conversions;
mod builtin_type_calls;
mod builtins_identity;
mod builtins_iter;
mod call_binding;
mod call_unpacking;
mod checkpoint;
mod clip_grad;
mod collections_counter;
mod collections_counter_ops;
mod collections_deque;
mod collections_dicts;
mod comparisons;
pub mod constructs;
mod containers;
mod convert_parameters;
mod convolution;
mod cuda_memory;
mod custom_function;
mod custom_function_dirty;
mod data_collate;
mod data_loader;
mod dataclass_compare;
mod dataclass_functions;
mod dataclass_init;
mod dataclasses;
mod ddp;
mod deepcopy;
mod depth;
mod descriptors;
mod dict_keys;
mod dict_methods;
mod dict_unpacking;
mod differences;
mod dropout;
mod dunder;
mod einsum;
mod exception_attrs;
mod exceptions;
mod format_spec;
mod frames;
mod function_attrs;
mod gc_module;
mod genexpr;
mod grad_accumulator;
mod grad_fn_types;
mod grad_mode_functions;
mod grad_scaler;
mod group_norm;
mod handlers;
mod index_put;
mod index_reductions;
mod inplace;
mod inplace_activations;
mod instance_dict;
mod int_ops;
mod interp;
mod itertools;
mod itertools_more;
mod keywords;
mod kl_div;
mod layers;
mod list_methods;
mod losses;
mod lr_scheduler;
mod lr_scheduler_composite;
mod lr_scheduler_cycles;
mod lr_scheduler_cyclic;
mod lr_scheduler_rates;
mod lr_scheduler_restarts;
mod lru_cache;
pub mod measured_loop;
mod module_api;
mod module_backward_hooks;
mod module_forward;
mod multihead_attention;
mod multihead_attention_steps;
mod namedtuples;
mod natives;
mod node_hooks;
mod normalization;
mod numeric_builtins;
mod numpy_arrays;
mod ops_more;
mod optim;
mod optim_groups;
mod optim_state;
mod optim_step_wrapper;
mod ordering;
mod parameter_containers;
mod pointwise_math;
mod print_output;
mod random_module;
mod recurrent;
mod recurrent_cells;
mod recurrent_params;
mod recurrent_simple;
mod reprs;
mod return_types;
mod saved_tensors_hooks;
mod scalar_arith;
mod scope;
mod select_ops;
mod sets;
mod simple_namespace;
mod small_map;
mod source;
mod state_loading;
pub mod static_check;
mod stdlib;
mod str_indexing;
mod str_methods;
mod str_text_methods;
mod str_unpacking;
mod super_builtin;
mod syntax_check;
mod tensor_class;
mod tensor_hooks;
mod tensor_iter;
mod tensor_pieces;
mod tensor_sharing;
mod tensor_type;
mod torch_class_methods;
mod torch_construct;
mod torchlib;
mod traceback_module;
mod transformer;
mod type_builtin;
mod type_checks;
mod types_module;
mod unflatten;
pub(crate) mod user_hash;
mod version_info;
mod vm;
mod weak_containers;
mod weakrefs;

pub use interp::{Interpreter, RunEnd};
pub use print_output::Printed;
pub use source::SourceMap;
pub use vm::exceptions_caught_by_vm;
pub use vm::expressions_evaluated_by_tree;
pub use vm::expressions_run_compiled;
pub use vm::statements_run_by_tree;
pub use vm::stores_resolved_to_slots;
pub use vm::with_blocks_entered_by_vm;

use crate::error::{Error, InputErrorKind};
use crate::heap::Sym;
use crate::scenario::Workload;
use ruff_python_ast::ModModule;
use rustc_hash::FxHashMap;

/// Identifier and string interning.
#[derive(Default)]
pub struct Interner {
    names: Vec<std::rc::Rc<str>>,
    index: FxHashMap<std::rc::Rc<str>, Sym>,
    /// Bytes of the interned text (the workload's strings are never freed in the model).
    bytes: u64,
    /// Symbols of the model's own `'static` names by the text's address and length, so
    /// that a name looked up on every call (`forward`, a hook dict) hashes two words, not
    /// its text. Texts at different addresses still meet in `index`.
    statics: FxHashMap<(usize, usize), Sym>,
}

impl Interner {
    /// The symbol of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<Sym> {
        self.index.get(s).copied()
    }

    /// [`Interner::intern`] for a name of the model's own code (same symbol, same bytes).
    pub fn intern_static(&mut self, s: &'static str) -> Sym {
        let key = (s.as_ptr() as usize, s.len());
        if let Some(&sym) = self.statics.get(&key) {
            return sym;
        }
        let sym = self.intern(s);
        self.statics.insert(key, sym);
        sym
    }

    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&sym) = self.index.get(s) {
            return sym;
        }
        let sym = Sym(self.names.len() as u32);
        let text: std::rc::Rc<str> = s.into();
        self.bytes += s.len() as u64 + 2 * std::mem::size_of::<std::rc::Rc<str>>() as u64;
        self.names.push(text.clone());
        self.index.insert(text, sym);
        sym
    }

    /// Bytes held by the interned strings.
    pub fn total_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn name(&self, sym: Sym) -> &str {
        &self.names[sym.0 as usize]
    }

    /// The name as a shared string, to keep while the interpreter changes.
    pub fn name_rc(&self, sym: Sym) -> std::rc::Rc<str> {
        self.names[sym.0 as usize].clone()
    }
}

/// Parses the workload, reporting a syntax error at its place in the scenario file.
pub fn parse(workload: &Workload, file: &str) -> Result<ModModule, Error> {
    let module = ruff_python_parser::parse_module(&workload.source)
        .map(|parsed| parsed.into_syntax())
        .map_err(|e| {
            let map = SourceMap::new(workload, file);
            Error::input(
                InputErrorKind::PythonSyntax,
                map.location(e.location.start().to_u32()),
                e.error.to_string(),
            )
        })?;
    if let Err((offset, message)) = measured_loop::find(&workload.source, &module.body) {
        let map = SourceMap::new(workload, file);
        return Err(Error::input(
            InputErrorKind::Schema,
            map.location(offset),
            message,
        ));
    }
    if let Some((offset, message)) = syntax_check::first_error(&module.body) {
        let map = SourceMap::new(workload, file);
        return Err(Error::input(
            InputErrorKind::PythonSyntax,
            map.location(offset),
            format!("SyntaxError: {message}"),
        ));
    }
    Ok(module)
}
