import Testing
@testable import ModemCodecs

@Suite("UARTFraming")
struct UARTFramingTests {
    static let stopTexts: [(String, Double)] = [("1", 1), ("1.5", 1.5), ("2", 2)]

    @Test("parses every valid framing, upper and lower case")
    func parsesAllValid() throws {
        var count = 0
        for dataBits in 5...8 {
            for parity in UARTParity.allCases {
                for (stopText, stopBits) in Self.stopTexts {
                    let text = "\(dataBits)\(parity.rawValue)\(stopText)"
                    for variant in [text, text.lowercased(), " \(text)\n"] {
                        let framing = try UARTFraming(parsing: variant)
                        #expect(framing.dataBits == dataBits)
                        #expect(framing.parity == parity)
                        #expect(framing.stopBits == stopBits)
                        #expect(framing.description == text)
                        #expect(framing == (try UARTFraming(dataBits: dataBits, parity: parity, stopBits: stopBits)))
                        #expect(try UARTFraming(parsing: framing.description) == framing)
                    }
                    count += 1
                }
            }
        }
        #expect(count == 60)
    }

    @Test("rejects invalid framings with a message naming the text and the problem",
          arguments: [
              ("9N1", "data bits must be 5...8, got 9"),
              ("4N1", "data bits must be 5...8, got 4"),
              ("10N1", "data bits must be 5...8, got 10"),
              ("99999999999999999999999N1", "data bits must be 5...8, got 99999999999999999999999"),
              ("8X1", "unknown parity \"X\""),
              ("8x1", "unknown parity \"X\""),
              ("8N3", "stop bits must be 1, 1.5 or 2, got \"3\""),
              ("8N0", "stop bits must be 1, 1.5 or 2, got \"0\""),
              ("8N1.2", "stop bits must be 1, 1.5 or 2, got \"1.2\""),
              ("8N1x", "stop bits must be 1, 1.5 or 2, got \"1X\""),
              ("8N-1", "stop bits must be 1, 1.5 or 2, got \"-1\""),
              ("", "empty"),
              ("   ", "empty"),
              ("8N", "missing stop bits"),
              ("8", "missing parity"),
              ("N1", "missing data bits"),
          ])
    func rejectsInvalid(text: String, problem: String) {
        do {
            let framing = try UARTFraming(parsing: text)
            Issue.record("\"\(text)\" parsed as \(framing)")
        } catch {
            #expect(error.description.hasPrefix("invalid UART framing \"\(text)\": "), "\(error)")
            #expect(error.description.contains(problem), "\(error)")
        }
    }

    @Test("checked initializer")
    func checkedInit() throws {
        let framing = try UARTFraming()
        #expect(framing == UARTFraming.default8N1)
        #expect(framing.description == "8N1")
        #expect(throws: UARTFramingError.self) { try UARTFraming(dataBits: 9) }
        #expect(throws: UARTFramingError.self) { try UARTFraming(dataBits: 4) }
        #expect(throws: UARTFramingError.self) { try UARTFraming(stopBits: 3) }
        #expect(throws: UARTFramingError.self) { try UARTFraming(stopBits: .nan) }
        do {
            _ = try UARTFraming(dataBits: 9)
        } catch {
            #expect(error.description == "invalid UART framing: data bits must be 5...8, got 9")
        }
        do {
            _ = try UARTFraming(stopBits: 0.5)
        } catch {
            #expect(error.description == "invalid UART framing: stop bits must be 1, 1.5 or 2, got 0.5")
        }
    }

    @Test("lengths in bit periods")
    func lengths() throws {
        let cases: [(String, Int, Double)] = [
            ("8N1", 9, 10), ("7E1", 9, 10), ("8N2", 9, 11), ("5N1.5", 6, 7.5),
            ("5N2", 6, 8), ("8E2", 10, 12), ("7O1.5", 9, 10.5), ("6M1", 8, 9), ("6S1", 8, 9),
        ]
        for (text, before, length) in cases {
            let framing = try UARTFraming(parsing: text)
            #expect(framing.bitsBeforeStop == before, "\(text)")
            #expect(framing.characterLength == length, "\(text)")
        }
    }

    @Test("properties can be changed to valid values")
    func mutation() throws {
        var framing = UARTFraming.default8N1
        framing.dataBits = 7
        framing.parity = .even
        framing.stopBits = 1.5
        #expect(framing.description == "7E1.5")
        #expect(framing == (try UARTFraming(parsing: "7e1.5")))
    }
}
