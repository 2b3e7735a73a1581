/// A first-in-first-out queue with amortized O(1) append and removal at the front.
///
/// A removed element is gone at once: its slot is emptied, so the buffer keeps no reference to anything it no longer
/// holds (a command's closure, and what that closure captures). The emptied slots before `head` are dropped once they
/// make up half of the storage, so a long-lived queue neither grows without bound nor pays O(n) per removal.
struct FIFOBuffer<Element> {
    // Slots before `head` are nil; slots from `head` on hold the elements, in order.
    private var storage: [Element?] = []
    private var head = 0

    var isEmpty: Bool { self.head == self.storage.count }

    var count: Int { self.storage.count - self.head }

    mutating func append(_ element: Element) {
        self.storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard self.head < self.storage.count else { return nil }
        let element = self.storage[self.head].take()
        self.head += 1
        self.dropEmptySlots()
        return element
    }

    /// Removes and returns the first element that matches; O(n), for the rare cancellation.
    mutating func remove(firstWhere matches: (Element) -> Bool) -> Element? {
        let index = self.storage[self.head...].firstIndex { element in element.map(matches) ?? false }
        guard let index else { return nil }
        let element = self.storage.remove(at: index)
        self.dropEmptySlots()
        return element
    }

    /// Frees the storage once it holds nothing, and drops the emptied front once it is half of the storage.
    private mutating func dropEmptySlots() {
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head >= 64 && self.head * 2 >= self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
    }
}
