//! Interned call stacks: most events share a handful of stacks, so each distinct stack is
//! stored once and events refer to it by [`StackId`].

use serde::Serialize;
use std::collections::HashMap;

/// One frame of a workload stack: the file as written in the scenario (never an absolute
/// path of this machine), the line in that file, and the function name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    pub file: String,
    pub line: u32,
    pub name: String,
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

#[cfg(test)]
mod tests {
    use super::*;

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
