import AtomicPrimitives
import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("DispatchKit operators on AtomicPrimitives", .timeLimit(.minutes(1)))
struct OperatorTests {
    @Test("semaphore <<< performs, -- waits, ++ signals")
    func semaphoreSugar() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore(.binary)
            checks.expect((semaphore <<< { 7 }) == 7)
            semaphore--
            checks.expect(semaphore.wait(.now()) == .timedOut)
            semaphore++
            checks.expect(semaphore.wait(.now()) == .success)
        }
    }

    @Test("lock <<< runs under the lock, box <<< mutates")
    func lockAndBoxSugar() {
        let lock = MutexLock()
        #expect((lock <<< { lock.tryLock() }) == false, "held inside the block")
        let box = AtomicBox(1)
        let doubled =
            box <<< { value -> Int in
                value *= 2
                return value
            }
        #expect(doubled == 2)
        #expect(box.value == 2)
    }

    @Test("+ binds before <>, and <> chains left to right")
    func precedence() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.precedence")
            let log = AtomicBox<[Int]>([])
            let done = DispatchSemaphore(value: 0)
            let head = GCDTask(queue: queue) { log.mutate { $0.append(1) } }
            // `queue + block <> block` compiles only because `+` binds first: there is no `GCDQueue <> block`.
            let tail =
                head <> queue + { log.mutate { $0.append(2) } } <> {
                    log.mutate { $0.append(3) }
                    done.signal()
                }
            checks.expect(
                done.wait(timeout: .now() + .milliseconds(50)) == .timedOut,
                "nothing runs before the head starts"
            )
            head.async()
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value == [1, 2, 3])
            withExtendedLifetime(tail) {}
        }
    }
}
