/// A first-in-first-out queue with amortized O(1) append and removal at the front.
///
/// Elements before `head` have been removed; the storage is compacted once they make up half of it, so a long-lived
/// queue neither grows without bound nor pays O(n) per removal.
struct FIFOBuffer<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { self.head == self.storage.count }

    var count: Int { self.storage.count - self.head }

    mutating func append(_ element: Element) {
        self.storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard self.head < self.storage.count else { return nil }
        let element = self.storage[self.head]
        self.head += 1
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head >= 64 && self.head * 2 >= self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
        return element
    }

    /// Removes and returns the first element that matches; O(n), for the rare cancellation.
    mutating func remove(firstWhere matches: (Element) -> Bool) -> Element? {
        guard let index = self.storage[self.head...].firstIndex(where: matches) else { return nil }
        return self.storage.remove(at: index)
    }
}
