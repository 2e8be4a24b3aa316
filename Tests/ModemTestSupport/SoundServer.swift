import ProcessTestSupport

/// What `scripts/audio-loop.sh` needs to start a private PulseAudio server with a null sink (the
/// loopback sound server of the ALSA and audio-link tests). Tests that use it carry
/// `.requires(SoundServer.pulseAudio, SoundServer.pactl)`; once they run, a server that does not
/// start is a failure.
public enum SoundServer {
    /// The PulseAudio server.
    public static let pulseAudio = Peer.tool("pulseaudio", package: "pulseaudio libasound2-plugins")
    /// PulseAudio's control client, which the script asks whether the server answers.
    public static let pactl = Peer.tool("pactl", package: "pulseaudio-utils")
}
