// `make demo`: a short tour of ConcurrencyKit, printing what each scene shows as it happens.
import ConcurrencyKit

print("ConcurrencyKit demo\n")
AtomicPrimitivesScene.run()
print("\nDone.")
