// Depending on DispatchKit alone gives the whole of AtomicPrimitives too.
@_exported import AtomicPrimitives
