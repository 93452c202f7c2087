//! `torch.distributed` calls and the p2p `Work` handles they return.

use super::*;

/// Calls a `torch.distributed` native.
pub(super) fn call_dist(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    use Native::*;
    let p = &a.pos;
    match n {
        DistInit => {
            let rank = match a.kw(it, "rank") {
                Some(v) => int_arg(it, v, "rank")?,
                None => 0,
            };
            let world = match a.kw(it, "world_size") {
                Some(v) => int_arg(it, v, "world_size")?,
                None => 1,
            };
            if rank < 0 || rank >= world {
                return it.error("ValueError: rank must be in [0, world_size)");
            }
            it.process_group = Some((rank, world));
            Ok(Value::None)
        }
        DistGetRank | DistGetWorldSize => match it.process_group {
            Some((rank, world)) => Ok(Value::Int(if n == DistGetRank { rank } else { world })),
            None => it.error(
                "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
            ),
        },
        DistIsend | DistIrecv => match p.first() {
            Some(&t) if it.is_tensor(t) => {
                it.heap.incref(t);
                Ok(new_work(it, vec![t]))
            }
            _ => it.error("TypeError: isend/irecv expect a tensor"),
        },
        DistSend | DistRecv | DistBarrier => {
            if it.process_group.is_none() {
                return it.error("ValueError: Default process group has not been initialized");
            }
            Ok(Value::None)
        }
        DistBatchIsendIrecv => {
            let Some(&ops) = p.first() else {
                return it.error("TypeError: batch_isend_irecv(p2p_op_list)");
            };
            let ops = sequence_items(it, ops)?;
            let tensor_sym = it.names.intern("tensor");
            let mut tensors = Vec::new();
            for op in ops {
                let t = it.get_attr(op, tensor_sym)?;
                tensors.push(t);
            }
            // One work per op, each holding its tensor until `wait()`.
            let mut works = Vec::new();
            for t in tensors {
                works.push(new_work(it, vec![t]));
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(works))))
        }
        DistIsInitialized => Ok(Value::Bool(it.process_group.is_some())),
        // One rank: the sum over the group is the tensor itself, reduced in place (no
        // allocation); `async_op=True` gives a work handle holding it until `wait()`.
        DistAllReduce => {
            if it.process_group.is_none() {
                return it.error("ValueError: Default process group has not been initialized");
            }
            match a.kw(it, "tensor").or(p.first().copied()) {
                Some(t) if it.is_tensor(t) => match a.kw(it, "async_op") {
                    Some(v) if it.truth(v)? => {
                        it.heap.incref(t);
                        Ok(new_work(it, vec![t]))
                    }
                    _ => Ok(Value::None),
                },
                _ => it.error("TypeError: all_reduce(): argument 'tensor' must be Tensor"),
            }
        }
        _ => it.error("TypeError: unknown builtin"),
    }
}

/// A `Work` handle of a p2p op (pybind11, not a GC object) holding `tensors` until `wait()`.
fn new_work(it: &mut Interpreter<'_>, tensors: Vec<Value>) -> Value {
    Value::Obj(it.heap.insert_uncounted(ObjKind::CppHandle {
        type_name: "Work",
        held: tensors,
    }))
}
