//! Interned call stacks: most events share a handful of stacks, so each distinct stack is
//! stored once and events refer to it by [`StackId`].

use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// One frame of a workload stack: the file as written in the scenario (never an absolute
/// path of this machine), the line in that file, and the function name.
///
/// The strings are shared (`Arc`, since timelines cross threads): a snapshot names one file
/// or function in thousands of frames, and a crafted one references one long string through
/// the pickle memo many times; each distinct string is allocated once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    pub file: Arc<str>,
    pub line: u32,
    pub name: Arc<str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
pub struct StackId(pub u32);

/// Stacks, innermost frame first (the order of PyTorch's snapshot `frames`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StackTable {
    stacks: Vec<Vec<Frame>>,
    #[serde(skip)]
    index: HashMap<Vec<Frame>, StackId>,
}

impl StackTable {
    /// Returns the id of `frames`, adding it if it is new. The empty stack is a valid stack.
    pub fn intern(&mut self, frames: Vec<Frame>) -> StackId {
        if let Some(&id) = self.index.get(&frames) {
            return id;
        }
        let id = StackId(self.stacks.len() as u32);
        self.stacks.push(frames.clone());
        self.index.insert(frames, id);
        id
    }

    /// The same stacks under the same ids, each frame rewritten by `rename` (golden files name
    /// workload positions relative to the workload, see `report::positions`).
    pub fn map_frames(&self, rename: impl Fn(&Frame) -> Frame) -> StackTable {
        let mut table = StackTable::default();
        for frames in &self.stacks {
            let renamed: Vec<Frame> = frames.iter().map(&rename).collect();
            table
                .index
                .entry(renamed.clone())
                .or_insert(StackId(table.stacks.len() as u32));
            table.stacks.push(renamed);
        }
        table
    }

    pub fn get(&self, id: StackId) -> &[Frame] {
        self.stacks
            .get(id.0 as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }
}

/// Stacks as a trie of (function, line) steps, outermost frame first, so that finding the
/// current stack's id walks the frames with one small hash lookup each and allocates nothing
/// (a stack as a `Vec` key was built and hashed per allocation event before). Node 0 is the
/// empty stack.
#[derive(Debug, Default)]
pub struct StackTrie {
    /// (parent node, function name symbol, line) → child node.
    children: rustc_hash::FxHashMap<(u32, u32, u32), u32>,
    /// Each node's interned stack, once one was asked for.
    ids: Vec<Option<StackId>>,
}

/// A position in a [`StackTrie`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackNode(u32);

impl StackTrie {
    /// The node of the stack whose frames, outermost first, are `(name, line)` steps, and its
    /// interned id if [`StackTrie::remember`] gave it one.
    pub fn find(
        &mut self,
        frames: impl Iterator<Item = (u32, u32)>,
    ) -> (StackNode, Option<StackId>) {
        if self.ids.is_empty() {
            self.ids.push(None);
        }
        let mut node = 0u32;
        for (name, line) in frames {
            let next = self.ids.len() as u32;
            node = *self.children.entry((node, name, line)).or_insert(next);
            if node == next {
                self.ids.push(None);
            }
        }
        (StackNode(node), self.ids[node as usize])
    }

    /// Records the interned id of the stack at `node`.
    pub fn remember(&mut self, node: StackNode, id: StackId) {
        self.ids[node.0 as usize] = Some(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trie_finds_each_distinct_stack_at_its_own_node() {
        let mut trie = StackTrie::default();
        let (empty, none) = trie.find(std::iter::empty());
        assert_eq!(none, None);
        let (a, _) = trie.find([(1, 10), (2, 20)].into_iter());
        let (b, _) = trie.find([(1, 10), (2, 21)].into_iter());
        let (c, _) = trie.find([(1, 10)].into_iter());
        // A prefix, a sibling and the empty stack are all different stacks.
        assert!(a != b && a != c && b != c && empty != a && empty != c);
        trie.remember(a, StackId(7));
        trie.remember(empty, StackId(0));
        assert_eq!(
            trie.find([(1, 10), (2, 20)].into_iter()),
            (a, Some(StackId(7)))
        );
        assert_eq!(trie.find([(1, 10), (2, 21)].into_iter()), (b, None));
        assert_eq!(trie.find(std::iter::empty()), (empty, Some(StackId(0))));
        // Same function and line under another caller is another stack.
        let (d, id) = trie.find([(3, 10), (2, 20)].into_iter());
        assert!(d != a && id.is_none());
    }

    #[test]
    fn interning_returns_the_same_id_for_the_same_stack() {
        let mut t = StackTable::default();
        let f = |line| Frame {
            file: "s.yaml".into(),
            line,
            name: "f".into(),
        };
        let a = t.intern(vec![f(3), f(9)]);
        let b = t.intern(vec![f(4)]);
        assert_ne!(a, b);
        assert_eq!(t.intern(vec![f(3), f(9)]), a);
        assert_eq!(t.get(b)[0].line, 4);
        assert_eq!(t.len(), 2);
    }
}
