import ModemAudio
import ModemCodecs

/// What a ``LinkStation`` needs of the modem under it: frames in, audio out, audio in, frames out.
/// Three modems: ``LinkModem`` (HDLC over AFSK at the configured baud rate, with coded frames),
/// ``OFDMLinkModem`` (the frames in LDPC blocks of OFDM transmissions at an adapted rate) and
/// ``HFLinkModem`` (the frames in HF transmissions for an SSB radio, at an adapted rate), chosen by
/// the configuration's timing (``makeLinkModem(configuration:sampleRate:tag:)``).
public protocol LinkAudioModem: AnyObject {
    /// Samples per second, in Hz.
    var sampleRate: Int { get }
    /// Whether a transmission is heard now (carrier sense for shared media).
    var hearsCarrier: Bool { get }
    /// Whether queued audio has not all been handed out yet.
    var isTransmitting: Bool { get }
    /// Frames decoded so far.
    var framesDecoded: Int { get }
    /// Damage heard: frames (FSK) or blocks (OFDM) whose check failed.
    var framesDamaged: Int { get }
    /// Frames that arrived under forward error correction.
    var codedFramesDecoded: Int { get }
    /// Queues frames for sending.
    func send(_ frames: [LinkFrame])
    /// The next `count` samples to play, the spans of frames among them (relative to the block),
    /// and whether what was queued has all been played in this block.
    func output(count: Int) -> (samples: [Float], frameSpans: [Range<Int>], finished: Bool)
    /// Demodulates received audio: the frames completed, and whether something else was heard (a
    /// peer speaking another protocol, or a transmission that could not be decoded).
    func receive(_ samples: UnsafeBufferPointer<Float>) -> (frames: [LinkFrame], heardForeign: Bool)
    /// Both ends share one line (each hears the other and itself): transmissions keep short.
    func useSharedMedium()
    /// The line rate this end sends at now, in bit/s (a modem that adapts changes it).
    var sendBitRate: Double { get }
    /// How this end sends now, for reports ("1200 baud AFSK", "OFDM 4096qam 5/6 cable").
    var sendDescription: String { get }
}

extension LinkModem: LinkAudioModem {
    /// Nothing changes: its transmissions end with their frames anyway.
    public func useSharedMedium() {}
    /// The baud rate (one bit per baud).
    public var sendBitRate: Double { configuration.baudRate }
    /// "1200 baud AFSK" (with "coded" while frames go out under FEC).
    public var sendDescription: String { "\(Int(configuration.baudRate)) baud AFSK\(codesFrames ? ", coded" : "")" }
}

/// The modem a configuration asks for: ``OFDMLinkModem`` for OFDM timing, ``HFLinkModem`` for HF
/// timing, ``LinkModem`` otherwise.
/// - Parameter tag: for OFDM and HF, this end's mark in its blocks (nil: drawn at random; the
///   in-memory media give their two ends fixed ones, so runs repeat).
/// - Throws: ``ModemPipelines/ModemSettingsError`` when the baud rate, the OFDM or the HF modem does not fit `sampleRate`.
public func makeLinkModem(configuration: LinkConfiguration, sampleRate: Int, tag: UInt8? = nil) throws -> any LinkAudioModem {
    if configuration.usesOFDM {
        return try OFDMLinkModem(configuration: configuration, sampleRate: sampleRate, tag: tag ?? UInt8.random(in: 1...255))
    }
    if configuration.usesHF {
        return try HFLinkModem(configuration: configuration, sampleRate: sampleRate, tag: tag ?? UInt8.random(in: 1...255))
    }
    return try LinkModem(configuration: configuration, sampleRate: sampleRate)
}

/// The amplitude of a tone with the power of the modem `configuration` asks for (``OFDMLinkModem/signalAmplitude``,
/// ``HFLinkModem/signalAmplitude``, 0.5 for AFSK), for setting a line's noise from an SNR.
public func linkSignalAmplitude(_ configuration: LinkConfiguration) -> Double {
    configuration.usesOFDM ? OFDMLinkModem.signalAmplitude : configuration.usesHF ? HFLinkModem.signalAmplitude : 0.5
}
