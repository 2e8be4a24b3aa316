import Foundation
import ModemAudio
import Testing

@Suite("ALSA device listing against a fake alsa-lib")
struct ALSADevicesTests {
    @Test("hints and cards are merged: default first, directions from IOID, hw and plughw per card")
    func merge() throws {
        let fake = FakeALSA()
        fake.hints = [
            ALSANameHint(name: "null", description: "Discard all samples (playback) or generate zero samples (capture)", ioid: nil),
            ALSANameHint(name: "default", description: "Playback/recording through the PulseAudio sound server", ioid: nil),
            ALSANameHint(name: "sysdefault:CARD=PCH", description: "HDA Intel PCH, ALC892 Analog\nDefault Audio Device", ioid: nil),
            ALSANameHint(name: "front:CARD=PCH,DEV=0", description: "HDA Intel PCH\n  Front output  ", ioid: "Output"),
            ALSANameHint(name: "dsnoop:CARD=PCH,DEV=0", description: "", ioid: "Input"),
            ALSANameHint(name: "null", description: "again", ioid: nil),
        ]
        fake.cards = [ALSASoundCard(index: 0, name: "HDA Intel PCH", devices: [
            .init(index: 0, name: "ALC892 Analog", playback: true, capture: true),
            .init(index: 3, name: "HDMI 0", playback: true, capture: false),
        ])]
        let devices = try ALSADevices.scan(backend: fake)
        #expect(devices.map(\.name) == ["default", "null", "sysdefault:CARD=PCH", "front:CARD=PCH,DEV=0",
                                        "dsnoop:CARD=PCH,DEV=0", "plughw:0,0", "hw:0,0", "plughw:0,3", "hw:0,3"])
        let byName = Dictionary(uniqueKeysWithValues: devices.map { ($0.name, $0) })
        #expect(byName["front:CARD=PCH,DEV=0"]?.playback == true && byName["front:CARD=PCH,DEV=0"]?.capture == false)
        #expect(byName["dsnoop:CARD=PCH,DEV=0"]?.playback == false && byName["dsnoop:CARD=PCH,DEV=0"]?.capture == true)
        #expect(byName["default"]?.playback == true && byName["default"]?.capture == true)
        #expect(byName["hw:0,3"]?.capture == false)
        #expect(byName["sysdefault:CARD=PCH"]?.description == "HDA Intel PCH, ALC892 Analog, Default Audio Device")
        #expect(byName["front:CARD=PCH,DEV=0"]?.description == "HDA Intel PCH, Front output")
        #expect(byName["plughw:0,0"]?.description.contains("HDA Intel PCH: ALC892 Analog") == true)
        #expect(byName["null"]?.description.hasPrefix("Discard") == true)
    }

    @Test("converter and filter plugins are no devices: left out unless all are asked for; oss without /dev/dsp likewise")
    func plugins() throws {
        let fake = FakeALSA()
        fake.hints = ["default", "null", "lavrate", "samplerate", "speexrate", "speex", "upmix", "vdownmix", "pulse", "oss"].map {
            ALSANameHint(name: $0, description: "the \($0) plugin", ioid: nil)
        }
        let listed = try ALSADevices.scan(backend: fake).map(\.name)
        let oss = access("/dev/dsp", F_OK) == 0
        #expect(listed == ["default", "null", "pulse"] + (oss ? ["oss"] : []), "\(listed)")
        #expect(try ALSADevices.scan(backend: fake, all: true).count == fake.hints.count)
    }

    @Test("no cards and no hints is an empty list, not an error")
    func empty() throws {
        #expect(try ALSADevices.scan(backend: FakeALSA()).isEmpty)
    }

    @Test("a failing card query leaves the hints; failing hints are an error with the code")
    func failures() throws {
        let fake = FakeALSA()
        fake.hints = [ALSANameHint(name: "default", description: "", ioid: nil)]
        fake.cardsResult = -EACCES
        #expect(try ALSADevices.scan(backend: fake).map(\.name) == ["default"])
        fake.hintsResult = -ENOMEM
        let error = #expect(throws: AudioError.self) { try ALSADevices.scan(backend: fake) }
        #expect(error?.code == -ENOMEM)
        #expect(error?.message.contains("snd_device_name_hint") == true)
    }

    @Test("reloadConfiguration reaches the backend")
    func reload() {
        let fake = FakeALSA()
        ALSADevices.reloadConfiguration(backend: fake)
        #expect(fake.reloads == 1)
    }
}
