// Depending on SafeValueCore alone gives the whole of AtomicPrimitives too.
@_exported import AtomicPrimitives
