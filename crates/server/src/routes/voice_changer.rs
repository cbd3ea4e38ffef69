use axum::extract::State;
use axum::response::Response;
use mediagen_jobs::voice::ChangeOptions;

use crate::error::ApiResult;
use crate::extract::Auth;
use crate::media_input::MediaJob;
use crate::state::AppState;
use crate::voices::{cloned_voice, voice_not_found};
use mediagen_jobs::voice::ChangeRequest;

/// Change the voice in a file
///
/// `multipart/form-data` with a `file` part (speech in any audio or video
/// container ffmpeg reads) and the options as text parts, or a JSON body
/// with the `fileId` of an uploaded file. Options: `voiceId` (required: a
/// catalog voice or a cloned voice of the account), `mode`, `format` and
/// `sampleRate` of audio output as in text-to-speech (mp3 at 24 kHz by
/// default).
///
/// Modes: `convert` (default) keeps the words, timing and intonation and
/// moves the pitch to the target's median and range and the formants by
/// the ratio of the spectral centroids, with the WORLD vocoder (a catalog
/// voice's profile is measured on a few sentences it speaks, once).
/// `resynthesize` (`revoice`, its name before, is still taken) transcribes
/// the file and speaks each recognised line again with the voice,
/// time-fitted into the line's slot (at most 1.5× faster or 1.25× slower;
/// the rest of a slot stays silent, a line that still does not fit runs on
/// and reports its `overrun`); silences and non-speech sound between lines
/// are kept. A neural clone (`engine: kokoro`) speaks itself, in the
/// language heard in the file (detected; any language Kokoro has, else the
/// clone's own); a WORLD clone speaks as its `baseVoiceId` converted toward
/// its profile, and it and a catalog voice hear the file in the voice's
/// language.
///
/// The job's `result`: `{audioUrl, duration (seconds, the input's), format,
/// sampleRate, contentType, voiceId, fileId, mode, pitchBefore, pitchAfter,
/// targetPitch, similarity: {before, after}}` (pitches are medians in Hz,
/// measured; `targetPitch` is `null` when resynthesizing with a catalog
/// voice; `similarity`: cosine similarities of speaker embeddings of the
/// input's and the output's first 30 s to the target voice saying its
/// preview sentence, `null` where the speaker encoder is not installed),
/// plus `converter` in convert mode and `speakerVoiceId` (the catalog
/// voice whose phonemes were spoken), `language`, `text` and `segments:
/// [{start, end, text, spokenStart, spokenEnd, speedup, overrun}]` in
/// resynthesize mode. A video input comes back as `videoUrl` with its
/// picture copied and the new sound (mp4, or mkv for codecs mp4 cannot
/// hold). Unknown `voiceId` → 404 `voice_not_found`; resynthesizing with a
/// cloned voice whose language no catalog voice speaks → 422; a file with
/// no speech in resynthesize mode fails the job (`no_speech`, refunded).
/// Price: `costs."voice.change"` credits per second of input, rounded up.
#[utoipa::path(post, path = "/v1/voice-changer", tag = "voice", security(("bearer" = ["write"])),
    request_body(content((mediagen_jobs::voice::VoiceChangerForm = "multipart/form-data"))),
    responses((status = 200, body = crate::jobs::JobView), (status = 202, body = crate::jobs::JobView),
              (status = 400), (status = 404, description = "`voice_not_found` or no such file"),
              (status = 415), (status = 422)))]
pub async fn change(
    State(state): State<AppState>,
    auth: Auth,
    input: MediaJob<ChangeRequest>,
) -> ApiResult<Response> {
    let options = ChangeOptions::parse(input.fields())?;
    let cloned = cloned_voice(&state, &auth.account_id, &options.voice_id).await?;
    if cloned.is_none() && state.catalog.voices.voice(&options.voice_id).is_none() {
        return Err(voice_not_found(&options.voice_id).into());
    }
    options.check(cloned.as_ref())?;
    input
        .submit(&state, &auth, |file| options.with(file, cloned))
        .await
}
