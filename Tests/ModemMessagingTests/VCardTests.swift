import ModemMessaging
import Testing

@Suite("vCard 4.0 (RFC 6350)")
struct VCardTests {
    /// Cards the RFC allows; each must parse, and its FN is given.
    static let valid: [(String, String)] = [
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Simon Perreault\r\nEND:VCARD\r\n", "Simon Perreault"),
        // RFC 6350 section 8's example (abridged), with groups, parameters and quoted values.
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Simon Perreault\r\nN:Perreault;Simon;;;ing. jr,M.Sc.\r\n"
            + "BDAY:--0203\r\nANNIVERSARY:20090808T1430-0500\r\nGENDER:M\r\n"
            + "LANG;PREF=1:fr\r\nLANG;PREF=2:en\r\nORG;TYPE=work:Viagenie\r\n"
            + "ADR;TYPE=work:;Suite D2-630;2875 Laurier;Quebec;QC;G1V 2M2;Canada\r\n"
            + "TEL;VALUE=uri;TYPE=\"work,voice\";PREF=1:tel:+1-418-656-9254;ext=102\r\n"
            + "EMAIL;TYPE=work:simon.perreault@viagenie.ca\r\n"
            + "GEO;TYPE=work:geo:46.772673,-71.282945\r\n"
            + "KEY;TYPE=work;VALUE=uri:http://www.viagenie.ca/simon.perreault/simon.asc\r\n"
            + "TZ:-0500\r\nURL;TYPE=home:http://nomis80.org\r\nEND:VCARD\r\n", "Simon Perreault"),
        // LF only, lower-case names, no final line break.
        ("begin:vcard\nversion:4.0\nfn:Jane Doe\nend:vcard", "Jane Doe"),
        // Folding with a space and with a tab, in the middle of a UTF-8 name.
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Zo\r\n ë Ünïcødé\r\n\t Name\r\nEND:VCARD\r\n", "Zoë Ünïcødé Name"),
        // Groups, x-names, escaped text, an empty value, trailing line breaks.
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nitem1.FN:Doe\\, Jane\\; \\nPhD\r\nX-SKYPE:jane\r\nNOTE:\r\nEND:VCARD\r\n\r\n",
         "Doe, Jane; \nPhD"),
        // RFC 6868 caret encoding in a quoted parameter; a parameter with several values.
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:A\r\nADR;LABEL=\"1 Main St^nSpringfield ^'HQ^'\";TYPE=home,work:;;1 Main St;;;;\r\nEND:VCARD\r\n", "A"),
        // Two FN (allowed: 1*) and KIND once.
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nKIND:individual\r\nFN:One\r\nFN;LANGUAGE=fr:Un\r\nEND:VCARD\r\n", "One"),
    ]

    /// Cards refused, each with a word the error must contain.
    static let invalid: [(String, String)] = [
        ("", "empty"),
        ("BEGIN:VCARD\r\nFN:No version\r\nEND:VCARD\r\n", "VERSION"),
        ("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Old\r\nEND:VCARD\r\n", "4.0"),
        ("BEGIN:VCARD\r\nFN:Late\r\nVERSION:4.0\r\nEND:VCARD\r\n", "VERSION"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nN:Doe;John;;;\r\nEND:VCARD\r\n", "FN"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\n", "END:VCARD"),
        ("VERSION:4.0\r\nBEGIN:VCARD\r\nFN:x\r\nEND:VCARD\r\n", "BEGIN"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:4.0\r\nFN:y\r\nEND:VCARD\r\n", "one card only"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nBEGIN:VCARD\r\nEND:VCARD\r\n", "nesting"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN x\r\nEND:VCARD\r\n", "\":\""),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nF_N:x\r\nEND:VCARD\r\n", "\":\""),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\n:x\r\nEND:VCARD\r\n", "name"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN;TYPE:x\r\nEND:VCARD\r\n", "="),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN;TYPE=\"work:x\r\nEND:VCARD\r\n", "unterminated"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN;TYPE=wo\"rk:x\r\nEND:VCARD\r\n", "double quote"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN;PREF=101:x\r\nEND:VCARD\r\n", "PREF"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:a\u{1}b\r\nEND:VCARD\r\n", "control"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:a\rb\r\nEND:VCARD\r\n", "carriage return"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\n\r\nNOTE:y\r\nEND:VCARD\r\n", "empty line"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:  \r\nEND:VCARD\r\n", "FN is empty"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nN:a;b;;;\r\nN:c;d;;;\r\nEND:VCARD\r\n", "at most once"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nVERSION:4.0\r\nFN:x\r\nEND:VCARD\r\n", "more than once"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nEND:VCARD\r\ntrailing\r\n", "END:VCARD"),
        ("BEGIN:VCARD\r\nVERSION:4.0\r\ngroup.:x\r\nFN:x\r\nEND:VCARD\r\n", "group"),
    ]

    @Test("the valid corpus parses, with the formatted name unescaped")
    func validCorpus() throws {
        for (text, name) in Self.valid {
            let card = try VCard.parse(text)
            #expect(card.formattedName == name, "\(text.debugDescription)")
            #expect(card.properties.first?.name == "VERSION")
        }
    }

    @Test("the invalid corpus is refused with an error naming the problem")
    func invalidCorpus() {
        for (text, word) in Self.invalid {
            do {
                let card = try VCard.parse(text)
                Issue.record("accepted \(text.debugDescription) as \(card)")
            } catch {
                #expect(error.description.contains(word), "\(text.debugDescription): \(error)")
            }
        }
    }

    @Test("bytes that are not UTF-8, and cards over 64 KiB, are refused")
    func bytesAndSize() {
        var bad = Array("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:".utf8)
        bad += [0xC3, 0x28]  // an invalid two-byte sequence
        bad += Array("\r\nEND:VCARD\r\n".utf8)
        #expect(throws: VCardError.self) { try VCard.parse(bad) }
        do {
            _ = try VCard.parse(bad)
        } catch {
            #expect(error.message.contains("UTF-8"))
        }

        let note = String(repeating: "a", count: 70_000)
        let big = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nNOTE:\(note)\r\nEND:VCARD\r\n"
        do {
            _ = try VCard.parse(big)
            Issue.record("a card of \(big.utf8.count) bytes was accepted")
        } catch {
            #expect(error.message.contains("over the limit of 65536"))
        }
        // Just under the limit is fine.
        let fits = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:x\r\nNOTE:\(String(repeating: "b", count: 65_000))\r\nEND:VCARD\r\n"
        #expect(throws: Never.self) { try VCard.parse(fits) }
    }

    @Test("the parameters and the group are read as written")
    func parameters() throws {
        let card = try VCard.parse(Self.valid[5].0)
        let adr = try #require(card.properties(named: "adr").first)
        #expect(adr.parameters.count == 2)
        #expect(adr.parameters[0].name == "LABEL")
        #expect(adr.parameters[0].values == ["1 Main St\nSpringfield \"HQ\""])
        #expect(adr.parameters[1].values == ["home", "work"])
        let grouped = try VCard.parse(Self.valid[4].0)
        #expect(grouped.properties(named: "FN").first?.group == "item1")
    }

    @Test("written cards fold long lines at 75 bytes and read back to the same properties")
    func roundTrip() throws {
        let long = String(repeating: "Ünïcødé, ", count: 40)
        let card = try VCard(formattedName: "Zoë; O'Brien, \"Jr\"\nline two", more: [
            VCard.Property(name: "note", value: VCard.escapeText(long)),
            VCard.Property(group: "work", name: "EMAIL", parameters: [VCard.Parameter(name: "TYPE", values: ["a:b", "c"])],
                           value: "zoe@example.org"),
        ])
        let text = card.serialized()
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: false) {
            #expect(line.utf8.count <= 75, "\(line)")
        }
        #expect(text.hasPrefix("BEGIN:VCARD\r\nVERSION:4.0\r\n"))
        #expect(text.hasSuffix("END:VCARD\r\n"))
        let again = try VCard.parse(text)
        #expect(again == card)
        #expect(again.formattedName == "Zoë; O'Brien, \"Jr\"\nline two")
        #expect(VCard.unescapeText(again.properties(named: "NOTE")[0].value) == long)
        #expect(again.properties(named: "EMAIL")[0].parameters[0].values == ["a:b", "c"])
    }

    @Test("the writer refuses what the parser would refuse")
    func writerValidates() {
        #expect(throws: VCardError.self) { try VCard(formattedName: "") }
        #expect(throws: VCardError.self) {
            try VCard(formattedName: "x", more: [VCard.Property(name: "BAD_NAME", value: "y")])
        }
    }
}
