//! Tests of the collector's allocation-free report search (predecessor index by counting
//! sort, epoch-stamped visited marks, shrinking scratch buffers) against a plain map-based
//! search over random heaps: same garbage, same tensors in the same order, same paths.

use super::super::{Attrs, Edge, GcProfile, Heap, ObjId, ObjKind, Sym, Value};
use super::{CycleHit, PATH_SEARCH_LIMIT};
use crate::scenario::PyVersion;
use crate::torch::{DeviceKind, Dtype, StorageId, TensorData};
use std::collections::{HashMap, HashSet, VecDeque};

type Hit = (ObjId, Vec<(ObjId, Edge)>, Vec<(ObjId, Edge)>);

fn heap(minor: u8) -> Heap {
    Heap::new(
        GcProfile::for_version(PyVersion::minor(minor)),
        [0, 0, 0],
        0,
    )
}

/// A tiny deterministic generator (xorshift64*), so that failures replay from the seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn tensor(h: &mut Heap, n: u32) -> ObjId {
    h.insert(ObjKind::Tensor(TensorData {
        storage: StorageId(n),
        shape: vec![16],
        dtype: Dtype::Float32,
        device: DeviceKind::Cuda,
        base: None,
        requires_grad: false,
        grad_fn: None,
        output_nr: 0,
        grad: None,
        is_param: false,
        contiguous: true,
        backward_hooks: None,
        cpp_hook_dict: None,
        post_acc_hooks: None,
        cpp_post_acc_hooks: None,
    }))
}

/// Adds a reference `from -> to` in whatever way `from`'s kind holds references.
fn link(h: &mut Heap, from: ObjId, to: ObjId, label: u32) {
    h.incref(Value::Obj(to));
    match h.kind_mut(from) {
        ObjKind::Instance {
            attrs: Attrs::Inline(items),
            ..
        } => items.push((Sym(label), Value::Obj(to))),
        ObjKind::List(items) => items.push(Value::Obj(to)),
        ObjKind::Dict(items) => items.push((Value::Int(label as i64), Value::Obj(to))),
        _ => unreachable!("only containers link"),
    }
    if matches!(h.kind(from), ObjKind::Dict(_)) {
        h.maintain_dict_tracking(from, Value::Obj(to));
    }
}

/// A random heap: instances (some with a `__dict__`), lists, dicts and tensors, random
/// references between them, some objects still held from outside (the "frame"), some
/// dropped so that only cycles keep them. Returns the objects still held.
fn random_heap(h: &mut Heap, rng: &mut Rng, objects: usize) -> Vec<ObjId> {
    let class = h.insert(ObjKind::Class(crate::heap::Class {
        name: Sym(0),
        base: None,
        attrs: Vec::new(),
    }));
    let mut ids = Vec::new();
    let mut owned_dicts = HashSet::new();
    let mut tensors = 0;
    for _ in 0..objects {
        let id = match rng.below(5) {
            0 | 1 => {
                h.incref(Value::Obj(class));
                if rng.below(3) == 0 {
                    // Up to 3.10 an instance keeps attributes in a `__dict__`.
                    let dict = h.insert(ObjKind::Dict(Vec::new()));
                    let inst = h.insert(ObjKind::Instance {
                        class,
                        attrs: Attrs::Dict(Some(dict)),
                    });
                    ids.push(dict);
                    owned_dicts.insert(dict);
                    inst
                } else {
                    h.insert(ObjKind::Instance {
                        class,
                        attrs: Attrs::Inline(Vec::new()),
                    })
                }
            }
            2 => h.insert(ObjKind::List(Vec::new())),
            3 => h.insert(ObjKind::Dict(Vec::new())),
            _ => {
                tensors += 1;
                tensor(h, tensors)
            }
        };
        ids.push(id);
    }
    let containers: Vec<ObjId> = ids
        .iter()
        .copied()
        .filter(|&id| !matches!(h.kind(id), ObjKind::Tensor(_)))
        .filter(|&id| {
            !matches!(
                h.kind(id),
                ObjKind::Instance {
                    attrs: Attrs::Dict(_),
                    ..
                }
            )
        })
        .collect();
    for _ in 0..objects * 2 {
        let from = containers[rng.below(containers.len())];
        let to = ids[rng.below(ids.len())];
        link(h, from, to, rng.below(4) as u32 + 1);
    }
    let mut held = Vec::new();
    for &id in &ids {
        // An instance's `__dict__` is held by its instance only; an object already freed by
        // an earlier drop is gone.
        if owned_dicts.contains(&id) || !h.is_alive(id) {
            continue;
        }
        if rng.below(4) == 0 {
            held.push(id);
        } else {
            h.decref_id(id);
        }
    }
    held
}

/// The report search as a plain map-based breadth-first search (the collector's original
/// formulation): garbage by subtracting internal references, predecessors as a map of
/// vectors filled in garbage and traversal order, tensors sorted by id.
fn reference_hits(h: &Heap, generation: u8) -> (usize, Vec<Hit>) {
    let members: Vec<ObjId> = (0..=generation)
        .flat_map(|g| h.generation_members(g))
        .collect();
    let index: HashMap<ObjId, usize> = members.iter().enumerate().map(|(i, &m)| (m, i)).collect();
    let mut gc_refs: Vec<i64> = members.iter().map(|&m| h.get(m).refcount as i64).collect();
    for &m in &members {
        h.traverse(m, |c, _| {
            if let Some(&j) = index.get(&c) {
                gc_refs[j] -= 1;
            }
        });
    }
    let mut reachable: Vec<bool> = gc_refs.iter().map(|&r| r > 0).collect();
    let mut stack: Vec<usize> = (0..members.len()).filter(|&i| reachable[i]).collect();
    while let Some(i) = stack.pop() {
        h.traverse(members[i], |c, _| {
            if let Some(&j) = index.get(&c)
                && !reachable[j]
            {
                reachable[j] = true;
                stack.push(j);
            }
        });
    }
    let garbage: Vec<ObjId> = (0..members.len())
        .filter(|&i| !reachable[i])
        .map(|i| members[i])
        .collect();
    let in_garbage: HashSet<ObjId> = garbage.iter().copied().collect();
    let mut preds: HashMap<ObjId, Vec<(ObjId, Edge)>> = HashMap::new();
    for &g in &garbage {
        h.traverse(g, |c, e| preds.entry(c).or_default().push((g, e)));
    }
    let mut tensors: Vec<ObjId> = preds
        .keys()
        .copied()
        .filter(|&id| matches!(h.kind(id), ObjKind::Tensor(_)))
        .collect();
    tensors.sort();
    let hits = tensors
        .into_iter()
        .map(|t| reference_hit(h, t, &preds, &in_garbage))
        .collect();
    (garbage.len(), hits)
}

fn reference_hit(
    h: &Heap,
    tensor: ObjId,
    preds: &HashMap<ObjId, Vec<(ObjId, Edge)>>,
    in_garbage: &HashSet<ObjId>,
) -> Hit {
    let mut towards: HashMap<ObjId, (ObjId, Edge)> = HashMap::new();
    let mut queue = VecDeque::from([tensor]);
    while let Some(target) = queue.pop_front() {
        if towards.len() > PATH_SEARCH_LIMIT {
            break;
        }
        for &(holder, edge) in preds.get(&target).map(Vec::as_slice).unwrap_or(&[]) {
            if holder == tensor || towards.contains_key(&holder) {
                continue;
            }
            towards.insert(holder, (target, edge));
            let owner = matches!(h.kind(holder), ObjKind::Dict(_))
                .then(|| {
                    preds.get(&holder)?.iter().find(|(o, e)| {
                        *e == Edge::Role("__dict__")
                            && matches!(h.kind(*o), ObjKind::Instance { .. })
                    })
                })
                .flatten()
                .map(|(o, _)| *o);
            let holder = match owner {
                Some(o) => {
                    towards.insert(o, (holder, Edge::Role("__dict__")));
                    o
                }
                None => holder,
            };
            let cycle = reference_cycle(h, holder, in_garbage);
            if !cycle.is_empty() {
                let mut path = Vec::new();
                let mut cur = holder;
                while cur != tensor {
                    let (child, edge) = towards[&cur];
                    path.push((cur, edge));
                    cur = child;
                }
                return (tensor, path, cycle);
            }
            queue.push_back(holder);
        }
    }
    (tensor, Vec::new(), Vec::new())
}

fn reference_cycle(h: &Heap, start: ObjId, in_garbage: &HashSet<ObjId>) -> Vec<(ObjId, Edge)> {
    let mut came: HashMap<ObjId, (ObjId, Edge)> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(cur) = queue.pop_front() {
        if came.len() > PATH_SEARCH_LIMIT {
            break;
        }
        let mut children = Vec::new();
        h.traverse(cur, |c, e| children.push((c, e)));
        for (child, edge) in children {
            if child == start {
                let mut path = vec![(cur, edge)];
                let mut node = cur;
                while node != start {
                    let (prev, e) = came[&node];
                    path.push((prev, e));
                    node = prev;
                }
                path.reverse();
                return path;
            }
            if in_garbage.contains(&child) && !came.contains_key(&child) {
                came.insert(child, (cur, edge));
                queue.push_back(child);
            }
        }
    }
    Vec::new()
}

fn collect_hits(h: &mut Heap, generation: u8) -> (usize, Vec<Hit>) {
    let mut hits = Vec::new();
    let out = h.collect(generation, |_, hit: &CycleHit| {
        hits.push((hit.tensor, hit.holder_path.clone(), hit.cycle.clone()))
    });
    (out.collected as usize, hits)
}

#[test]
fn report_paths_match_the_map_based_search_on_random_heaps() {
    let mut with_paths = 0;
    for seed in 1..=150u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let minor = if seed % 2 == 0 { 10 } else { 11 };
        let mut h = heap(minor);
        let objects = 5 + rng.below(60);
        let held = random_heap(&mut h, &mut rng, objects);
        // Several collections on one heap, so that reused buffers and stale marks from an
        // earlier collection are exercised too.
        for round in 0..3 {
            let generation = (seed as usize + round) as u8 % 3;
            let expected = reference_hits(&h, generation);
            let got = collect_hits(&mut h, generation);
            assert_eq!(
                got, expected,
                "seed {seed}, round {round}, generation {generation}"
            );
            with_paths += got
                .1
                .iter()
                .filter(|(_, p, c)| !p.is_empty() || !c.is_empty())
                .count();
            // Drop some of what is still held, making new garbage for the next round.
            for &id in held.iter().skip(round).step_by(3) {
                if h.is_alive(id) && h.get(id).refcount > 1 {
                    h.decref_id(id);
                }
            }
        }
    }
    assert!(
        with_paths > 50,
        "the random heaps must produce cycle paths ({with_paths})"
    );
}

#[test]
fn visited_marks_survive_epoch_wraparound() {
    let mut checked = 0;
    for seed in 1..100u64 {
        let mut rng = Rng(seed * 7919);
        let mut h = heap(11);
        random_heap(&mut h, &mut rng, 60);
        if reference_hits(&h, 2).1.is_empty() {
            continue;
        }
        // Marks left by a search in the last epoch before the counter wraps: the next
        // search wraps, and must neither read them nor fresh zero marks as visited.
        h.collect_scratch.towards_epoch = u32::MAX;
        h.collect_scratch.came_epoch = u32::MAX;
        h.collect_scratch.towards_stamp = vec![u32::MAX; 8];
        h.collect_scratch.came_stamp = vec![u32::MAX; 8];
        let expected = reference_hits(&h, 2);
        assert_eq!(collect_hits(&mut h, 2), expected, "seed {seed}");
        assert!(h.collect_scratch.towards_epoch < 1000, "the epoch wrapped");
        checked += 1;
    }
    assert!(
        checked >= 5,
        "enough heaps with garbage tensors ({checked})"
    );
}

#[test]
fn the_first_holder_in_garbage_order_names_the_path() {
    // t is held by a.x and by b.y; a and b are each on their own cycle. a comes first in
    // the garbage (allocated first), so the report names a.
    let mut h = heap(11);
    let class = h.insert(ObjKind::Class(crate::heap::Class {
        name: Sym(0),
        base: None,
        attrs: Vec::new(),
    }));
    let inst = |h: &mut Heap| {
        h.incref(Value::Obj(class));
        h.insert(ObjKind::Instance {
            class,
            attrs: Attrs::Inline(Vec::new()),
        })
    };
    let (a, b) = (inst(&mut h), inst(&mut h));
    let t = tensor(&mut h, 1);
    link(&mut h, a, a, 7);
    link(&mut h, b, b, 8);
    link(&mut h, a, t, 1);
    link(&mut h, b, t, 2);
    for id in [a, b, t] {
        h.decref_id(id);
    }
    let (collected, hits) = collect_hits(&mut h, 0);
    assert_eq!(collected, 3);
    assert_eq!(
        hits,
        vec![(
            t,
            vec![(a, Edge::Attr(Sym(1)))],
            vec![(a, Edge::Attr(Sym(7)))]
        )]
    );
}

#[test]
fn scratch_buffers_shrink_after_a_large_collection() {
    let mut h = heap(11);
    let mut rng = Rng(99);
    // One large collection: 30 000 objects examined.
    let held = random_heap(&mut h, &mut rng, 30_000);
    h.collect(0, |_, _| {});
    let large = h.collect_scratch.capacity();
    assert!(
        large > 8 * super::SCRATCH_FLOOR,
        "the large collection grew the buffers"
    );
    // Then only small young collections (the survivors above are older now), as a steady
    // loop makes: after a few the buffers shrink.
    drop(held);
    for _ in 0..super::SHRINK_AFTER {
        let mut small = Rng(5);
        random_heap(&mut h, &mut small, 50);
        h.collect(0, |_, _| {});
    }
    let after = h.collect_scratch.capacity();
    assert!(
        after <= 8 * 2 * super::SCRATCH_FLOOR,
        "buffers shrank from {large} to {after} entries"
    );
    // And a large collection again grows them and still reports correctly.
    let mut again = Rng(7);
    random_heap(&mut h, &mut again, 3_000);
    let expected = reference_hits(&h, 0);
    assert_eq!(collect_hits(&mut h, 0), expected);
}
