import Dispatch
import VisitCounter

let counter = VisitCounter()
DispatchQueue.concurrentPerform(iterations: 1_000) { index in
    counter.visit(index.isMultiple(of: 4) ? "/about" : "/")
}
print("visits to /: \(await counter.count(of: "/")), to /about: \(await counter.count(of: "/about"))")
