import Foundation
import ModemDSP
import ModemRuntime

/// What carries the audio between the two stations of a ``LinkTest``: one step plays a block from
/// each and feeds each what it hears.
public protocol LinkMedium: AnyObject {
    /// Samples per second, in Hz.
    var sampleRate: Int { get }
    /// The phone's clock, in seconds since the start.
    var now: Double { get }
    /// Whether both ends share one line (each hears the other and itself): stations then sense the
    /// carrier and back off at random before transmitting.
    var isShared: Bool { get }
    /// Advances both stations by one block.
    /// - Throws: what the audio devices report (``ModemAudio/AudioError``).
    func step(phone: LinkStation<PhoneStateMachine>, device: LinkStation<DeviceStateMachine>) throws
}

/// Channel impairments of the in-memory medium.
public struct LinkImpairments: Sendable, Hashable {
    /// Signal-to-noise ratio in dB over the full band (0...sampleRate/2), white Gaussian noise; nil: none.
    public var snrDB: Double?
    /// Probability that a frame is lost (its audio muted), 0...1.
    public var frameLoss: Double
    /// The device's sample clock runs this many parts per million fast (negative: slow), ±10000.
    public var clockDriftPPM: Double
    /// Band-pass edges in Hz (fourth-order), or nil for the whole band.
    public var bandPass: ClosedRange<Double>?
    /// A reflection after the band limits: delay in seconds (0...1) and gain (-1...1); nil for none.
    public var echoDelaySeconds: Double?
    public var echoGain: Double
    /// Seed of the noise and loss generators.
    public var seed: UInt64
    /// An SSB radio's audio path after the rest (``ModemDSP/HFChannelSimulator``: the radio's band,
    /// noise as SNR3k, mistuning, two fading paths), seeded from ``seed``; nil: none. Needs a sample
    /// rate that is a whole multiple of 8 kHz.
    public var hf: HFChannelImpairments?

    /// Creates impairments (default: a clean channel).
    public init(snrDB: Double? = nil, frameLoss: Double = 0, clockDriftPPM: Double = 0, bandPass: ClosedRange<Double>? = nil,
                echoDelaySeconds: Double? = nil, echoGain: Double = 0, seed: UInt64 = 1, hf: HFChannelImpairments? = nil) {
        precondition((0...1).contains(frameLoss), "frameLoss must be 0...1")
        precondition(abs(clockDriftPPM) <= 10000, "clockDriftPPM must be within ±10000")
        precondition(echoDelaySeconds.map { (0...1).contains($0) } ?? true && abs(echoGain) <= 1, "echo delay must be 0...1 s, gain -1...1")
        self.snrDB = snrDB
        self.frameLoss = frameLoss
        self.clockDriftPPM = clockDriftPPM
        self.bandPass = bandPass
        self.echoDelaySeconds = echoDelaySeconds
        self.echoGain = echoGain
        self.seed = seed
        self.hf = hf
    }

    /// A sound-card cable: SNR 40 dB over the full band, 100 ppm drift, 20-20,000 Hz.
    public static func cable(seed: UInt64 = 1) -> LinkImpairments {
        LinkImpairments(snrDB: 40, clockDriftPPM: 100, bandPass: 20...20000, seed: seed)
    }

    /// A speaker and a microphone: SNR 24 dB, 250-9000 Hz, a 1.5 ms echo at half amplitude, 300 ppm drift.
    public static func speaker(seed: UInt64 = 1) -> LinkImpairments {
        LinkImpairments(snrDB: 24, clockDriftPPM: 300, bandPass: 250...9000, echoDelaySeconds: 0.0015, echoGain: 0.5, seed: seed)
    }

    /// Two SSB radios: the radio's audio band (0.3-3.4 kHz at 8 kHz), white noise at `snr3k` dB
    /// in 3 kHz (default 15), the receiver tuned 25 Hz high, and with `fading` two paths 2 ms apart
    /// with a 1 Hz Doppler spread (CCIR "poor"-like; default: one steady path).
    public static func hf(snr3k: Double = 15, fading: Bool = false, seed: UInt64 = 1) -> LinkImpairments {
        LinkImpairments(seed: seed, hf: HFChannelImpairments(snr3kDB: snr3k, frequencyOffset: 25, fading: fading ? (0.002, 1) : nil, seed: seed))
    }
}

/// The in-memory medium: two one-way channels (phone to device, device to phone) as on an audio-jack
/// cable, each with noise, frame loss and clock drift. Time is channel time: a step takes no longer
/// than computing it. The device's clock runs at 1 + ppm·10⁻⁶ of the phone's, so it plays and
/// records slightly more (or fewer) samples per step and its timers run on its own clock.
public final class LoopbackMedium: LinkMedium {
    public let sampleRate: Int
    public let impairments: LinkImpairments
    /// Samples per step on the phone's clock.
    public let blockSamples: Int
    public private(set) var now: Double = 0
    public var isShared: Bool { false }
    /// Frames muted so far (phone to device, device to phone).
    public private(set) var framesLost = (toDevice: 0, toPhone: 0)
    /// While true both lines carry silence (plus the channel's noise): a cut cable. The loss and
    /// noise generators run on unchanged, so a cut does not shift what the seed gives afterwards.
    public var muted = false
    /// Turnarounds and frame air time of both ends, from what they played (``TurnaroundMeter``).
    public private(set) var turnarounds = TurnaroundMeter()
    private var transmitting = (phone: false, device: false)

    private var toDevice: Direction
    private var toPhone: Direction
    private var phoneSamples = 0
    private var deviceSamples = 0
    private var steps = 0

    private struct Direction {
        var channel: ChannelSimulator
        var loss: SplitMix64
        var fifo: [Float] = []
        var continuing: Bool?
        let lossProbability: Double
        var radio: HFChannelSimulator?

        /// Mutes lost frames, passes the block through the channel, returns exactly `count` samples.
        mutating func carry(_ block: [Float], spans: [Range<Int>], count: Int, lost: inout Int) -> [Float] {
            var x = block
            for s in spans {
                let drop: Bool
                if s.lowerBound == 0, let c = continuing { drop = c } else {
                    drop = lossProbability > 0 && loss.uniform() < lossProbability
                    if drop { lost += 1 }
                }
                if drop { for i in s { x[i] = 0 } }
                continuing = s.upperBound == block.count ? drop : nil
            }
            if spans.isEmpty { continuing = nil }
            let y = channel.process(x)
            fifo.append(contentsOf: radio != nil ? radio!.process(y) : y)
            var out = [Float](repeating: 0, count: count)
            // Keep a little slack so the resampler's jitter never starves the receiver.
            let available = fifo.count - 4
            if available > 0 {
                let n = min(count, available)
                let pad = count - n
                for i in 0..<n { out[pad + i] = fifo[i] }
                fifo.removeFirst(n)
            }
            return out
        }
    }

    /// Creates the medium.
    /// - Parameters:
    ///   - impairments: noise, loss, drift.
    ///   - sampleRate: Hz (default 48000).
    ///   - signalAmplitude: the stations' tone amplitude, to set the noise from the SNR (default 0.5;
    ///     for the OFDM modem, √2 times its RMS: ``OFDMLinkModem/signalAmplitude``).
    ///   - blockSeconds: step length on the phone's clock (default 10 ms).
    public init(impairments: LinkImpairments, sampleRate: Int = 48000, signalAmplitude: Double = 0.5, blockSeconds: Double = 0.01) {
        self.sampleRate = sampleRate
        self.impairments = impairments
        blockSamples = max(1, Int(Double(sampleRate) * blockSeconds))
        func channel(_ drift: Double, _ seed: UInt64) -> ChannelSimulator {
            var c = ChannelImpairments()
            c.clockDriftPPM = drift
            c.bandPass = impairments.bandPass
            if let d = impairments.echoDelaySeconds { c.echo = (d, impairments.echoGain) }
            if let snr = impairments.snrDB {
                c.noiseRMS = ChannelImpairments.noiseRMS(snrDB: snr, signalPower: signalAmplitude * signalAmplitude / 2)
            }
            c.seed = seed
            return ChannelSimulator(impairments: c, sampleRate: Double(sampleRate))
        }
        let d = impairments.clockDriftPPM
        var seeds = SplitMix64(seed: impairments.seed)
        toDevice = Direction(channel: channel(d, seeds.next()), loss: SplitMix64(seed: seeds.next()), lossProbability: impairments.frameLoss)
        toPhone = Direction(channel: channel(-d / (1 + d * 1e-6), seeds.next()), loss: SplitMix64(seed: seeds.next()),
                            lossProbability: impairments.frameLoss)
        if var hf = impairments.hf {
            let power = signalAmplitude * signalAmplitude / 2
            hf.seed = seeds.next()
            toDevice.radio = HFChannelSimulator(impairments: hf, sampleRate: sampleRate, signalPower: power)
            hf.seed = seeds.next()
            toPhone.radio = HFChannelSimulator(impairments: hf, sampleRate: sampleRate, signalPower: power)
        }
    }

    public func step(phone: LinkStation<PhoneStateMachine>, device: LinkStation<DeviceStateMachine>) throws {
        steps += 1
        let rate = Double(sampleRate)
        let ratio = 1 + impairments.clockDriftPPM * 1e-6
        let deviceCount = Int((Double(steps * blockSamples) * ratio).rounded(.down)) - deviceSamples
        let p = phone.output(count: blockSamples, now: Double(phoneSamples) / rate)
        let d = device.output(count: deviceCount, now: Double(deviceSamples) / rate)
        let start = Double(phoneSamples) / rate, end = Double(phoneSamples + blockSamples) / rate
        // Whether each was transmitting at the block's start (after the last block's output).
        turnarounds.note(phone: .init(spans: p.frameSpans, firstSample: phoneSamples, count: blockSamples, startTime: start, endTime: end,
                                      wasTransmitting: transmitting.phone),
                         device: .init(spans: d.frameSpans, firstSample: deviceSamples, count: deviceCount, startTime: start, endTime: end,
                                       wasTransmitting: transmitting.device))
        transmitting = (phone.modem.isTransmitting, device.modem.isTransmitting)
        let phoneAudio = muted ? [Float](repeating: 0, count: p.samples.count) : p.samples
        let deviceAudio = muted ? [Float](repeating: 0, count: d.samples.count) : d.samples
        let heardByDevice = toDevice.carry(phoneAudio, spans: p.frameSpans, count: deviceCount, lost: &framesLost.toDevice)
        let heardByPhone = toPhone.carry(deviceAudio, spans: d.frameSpans, count: blockSamples, lost: &framesLost.toPhone)
        phoneSamples += blockSamples
        deviceSamples += deviceCount
        now = Double(phoneSamples) / rate
        heardByPhone.withUnsafeBufferPointer { phone.receive($0, now: now) }
        heardByDevice.withUnsafeBufferPointer { device.receive($0, now: Double(deviceSamples) / rate) }
    }
}
