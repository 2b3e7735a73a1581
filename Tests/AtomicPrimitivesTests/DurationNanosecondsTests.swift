import AtomicPrimitives
import Testing

@Suite("Duration in nanoseconds")
struct DurationNanosecondsTests {
    @Test("whole nanoseconds, truncated toward zero, of either sign")
    func wholeNanoseconds() {
        #expect(Duration.zero.nanosecondsIfRepresentable == 0)
        #expect(Duration.seconds(1.5).nanosecondsIfRepresentable == 1_500_000_000)
        #expect(Duration.seconds(-1.5).nanosecondsIfRepresentable == -1_500_000_000)
        #expect(Duration.nanoseconds(-1).nanosecondsIfRepresentable == -1)
        #expect(Duration.seconds(3_600).nanosecondsIfRepresentable == 3_600_000_000_000)
    }

    @Test("what is finer than a nanosecond is dropped toward zero")
    func subNanosecond() {
        let almostOne = Duration(secondsComponent: 0, attosecondsComponent: 999_999_999)
        #expect(almostOne.nanosecondsIfRepresentable == 0)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 1).nanosecondsIfRepresentable == 0)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: -1).nanosecondsIfRepresentable == 0)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: 1_900_000_000).nanosecondsIfRepresentable == 1)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: -1_900_000_000).nanosecondsIfRepresentable == -1)
        let twoSecondsAndALittle = Duration(secondsComponent: 2, attosecondsComponent: 999_999_999)
        #expect(twoSecondsAndALittle.nanosecondsIfRepresentable == 2_000_000_000)
    }

    @Test("the largest durations that fit an Int give Int.max and Int.min; a nanosecond more gives nil")
    func edgesOfInt() {
        let largest = Duration.nanoseconds(Int64.max)
        #expect(largest.nanosecondsIfRepresentable == Int.max)
        #expect((largest + .nanoseconds(1)).nanosecondsIfRepresentable == nil)
        let smallest = Duration.nanoseconds(Int64.min)
        #expect(smallest.nanosecondsIfRepresentable == Int.min)
        #expect((smallest - .nanoseconds(1)).nanosecondsIfRepresentable == nil)
    }

    @Test("huge durations give nil, of either sign, without trapping")
    func huge() {
        #expect(Duration.seconds(Int64.max).nanosecondsIfRepresentable == nil)
        #expect(Duration.seconds(Int64.min).nanosecondsIfRepresentable == nil)
        #expect(Duration.seconds(10_000_000_000).nanosecondsIfRepresentable == nil)
        let largestDuration = Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999)
        #expect(largestDuration.nanosecondsIfRepresentable == nil)
    }
}
