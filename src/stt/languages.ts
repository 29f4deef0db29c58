// The language codes whisper.cpp knows (ISO-639-1, plus `haw` and `yue`, which have no 2-letter code).
const WHISPER_LANGUAGES = new Set(
  (
    'en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la ' +
    'mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be ' +
    'tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue'
  ).split(' '),
);

/** Every language code whisper accepts as a hint. */
export const whisperLanguages: readonly string[] = [...WHISPER_LANGUAGES];

export function isWhisperLanguage(code: string): boolean {
  return WHISPER_LANGUAGES.has(code);
}

/** Reported as `language` when nothing was said and no hint was given (BCP 47 "undetermined"). */
export const UNDETERMINED_LANGUAGE = 'und';
