//! A map for a frame's few names: a vector searched linearly, which beats hashing for the
//! handful of locals and cells a Python function has, and costs one allocation per frame.

pub struct SmallMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: PartialEq + Copy, V: Copy> SmallMap<K, V> {
    pub fn new() -> Self {
        SmallMap {
            entries: Vec::new(),
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets `key`, returning the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// A map over entries taken from one (keys already distinct).
    pub fn from_entries(entries: Vec<(K, V)>) -> Self {
        SmallMap { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn into_entries(self) -> Vec<(K, V)> {
        self.entries
    }

    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.entries.into_iter().map(|(_, v)| v)
    }
}

impl<K: PartialEq + Copy, V: Copy> FromIterator<(K, V)> for SmallMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        SmallMap {
            entries: iter.into_iter().collect(),
        }
    }
}
