//! Storages: the owners of tensor bytes, shared by views, freed with their last tensor.

use crate::timeline::StackId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorageId(pub u32);

#[derive(Debug, Clone)]
pub struct Storage {
    /// Bytes requested from the allocator (numel × element size).
    pub bytes: u64,
    /// Device address, for CUDA storages.
    pub addr: Option<u64>,
    /// Tensor objects sharing the storage.
    pub refs: u32,
    pub alloc_stack: StackId,
    /// dtype and shape of the tensor that allocated it.
    pub dtype: super::Dtype,
    pub shape: Box<[i64]>,
    /// The memory profiler's category of these bytes.
    pub category: super::Category,
    /// Autograd's version counter, shared by every tensor on these bytes (views and
    /// `detach()` share it in PyTorch too): each in-place write bumps it, and a saved tensor
    /// whose version moved cannot be used by backward.
    pub version: u32,
}

impl Storage {
    /// `float32[1024] (activation)`: dtype, shape and category, for reports.
    pub fn description(&self) -> String {
        format!(
            "{} ({})",
            super::describe(self.dtype, &self.shape),
            self.category.name()
        )
    }
}

/// All live storages.
#[derive(Debug, Default)]
pub struct Storages {
    slots: Vec<Option<Storage>>,
    free: Vec<u32>,
}

impl Storages {
    /// Adds a storage with one tensor reference.
    pub fn insert(&mut self, storage: Storage) -> StorageId {
        let storage = Storage { refs: 1, ..storage };
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(storage);
                StorageId(slot)
            }
            None => {
                self.slots.push(Some(storage));
                StorageId(self.slots.len() as u32 - 1)
            }
        }
    }

    pub fn get(&self, id: StorageId) -> &Storage {
        self.slots[id.0 as usize].as_ref().expect("live storage")
    }

    /// Re-labels a storage (a gradient buffer stolen as `.grad`).
    pub fn set_category(&mut self, id: StorageId, category: super::Category) {
        if let Some(s) = self.slots[id.0 as usize].as_mut()
            && s.category != category
        {
            s.category = category;
        }
    }

    /// An in-place write to the storage's bytes.
    pub fn bump_version(&mut self, id: StorageId) {
        if let Some(s) = self.slots[id.0 as usize].as_mut() {
            s.version += 1;
        }
    }

    /// The version counter of a live storage (0 for one already freed).
    pub fn version(&self, id: StorageId) -> u32 {
        self.slots
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .map_or(0, |s| s.version)
    }

    pub fn add_ref(&mut self, id: StorageId) {
        if let Some(s) = self.slots[id.0 as usize].as_mut() {
            s.refs += 1;
        }
    }

    /// Drops one tensor reference; returns the storage when that was the last one.
    pub fn drop_ref(&mut self, id: StorageId) -> Option<Storage> {
        let slot = self.slots[id.0 as usize].as_mut()?;
        slot.refs -= 1;
        if slot.refs > 0 {
            return None;
        }
        self.free.push(id.0);
        self.slots[id.0 as usize].take()
    }

    /// Storages with device memory that are alive.
    pub fn device_storages_alive(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .filter(|s| s.addr.is_some())
            .count() as u64
    }
}
