import Pipeline

let pipeline = Pipeline()
let subscription = pipeline.progress.subscribe { done in print("finished \(done) jobs") }
print("results: \(await pipeline.run(Array(1...5)))")
print("from a worker queue: \(await pipeline.onWorker { "hello" })")
subscription.cancel()
