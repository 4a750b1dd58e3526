"""How the upstream turns a stored link (a class name and a parameter) into its URL, as
the upstream's own link classes do (tests/data/upstream/LINK_CLASSES.md): most classes
put the parameter into a format; a few build the URL by their own rule."""

from urllib.parse import quote

# Links of these classes are kept upstream but never shown by its API.
ARCHIVED = frozenset(
    {
        "ZxdemoAuthor",
        "ZxdemoItem",
        "ZxdemoParty",
        "PushnpopProduction",
        "PushnpopParty",
        "PushnpopGroup",
        "PushnpopProfile",
        "DemosceneTvVideo",
        "StonishDisk",
        "LanyrdEvent",
        "GooglePlusPage",
        "GooglePlusEvent",
        "CappedVideo",
    }
)

FORMATS = {
    "AmigascneFile": "http://ftp.amigascne.org/pub/amiga{parameter}",
    "AmpAuthor": "https://amp.dascene.net/detail.php?view={parameter}",
    "ArtcityArtist": "http://artcity.bitfellas.org/index.php?a=artist&id={parameter}",
    "ArtcityImage": "http://artcity.bitfellas.org/index.php?a=show&id={parameter}",
    "AsciiarenaArtist": "https://asciiarena.se/artist/{parameter}",
    "AsciiarenaCrew": "https://asciiarena.se/crew/{parameter}",
    "AsciiarenaRelease": "https://asciiarena.se/release/{parameter}",
    "AtariLegendMenuset": "https://www.atarilegend.com/menusets/{parameter}",
    "AtarikiEntry": "http://atariki.krap.pl/index.php/{parameter}",
    "AtarimaniaPage": "http://www.atarimania.com/{parameter}.html",
    "BBSmatesBBS": "http://www.bbsmates.com/viewbbs.aspx?id={parameter}",
    "BandcampArtist": "https://{parameter}.bandcamp.com/",
    "BitjamAuthor": "http://www.bitfellas.org/e107_plugins/radio/radio.php?search&q={parameter}&type=author&page=1",
    "BitjamSong": "http://www.bitfellas.org/e107_plugins/radio/radio.php?info&id={parameter}",
    "BlueskyAccount": "https://bsky.app/profile/{parameter}",
    "BreaksAmigaParty": "http://arabuusimiehet.com/break/amiga/index.php?mode=party&partyid={parameter}",
    "C64chGroup": "https://c64.ch/groups/{parameter}",
    "C64chParty": "https://c64.ch/parties/{parameter}",
    "C64chProduction": "https://c64.ch/productions/{parameter}",
    "C64chScener": "https://c64.ch/sceners/{parameter}",
    "CablesProd": "https://cables.gl/p/{parameter}",
    "CablesUser": "https://cables.gl/user/{parameter}",
    "CappedVideo": "http://capped.tv/{parameter}",
    "CsdbBBS": "https://csdb.dk/bbs/?id={parameter}",
    "CsdbEvent": "https://csdb.dk/event/?id={parameter}",
    "CsdbGroup": "https://csdb.dk/group/?id={parameter}",
    "CsdbMusic": "https://csdb.dk/sid/?id={parameter}",
    "CsdbRelease": "https://csdb.dk/release/?id={parameter}",
    "CsdbScener": "https://csdb.dk/scener/?id={parameter}",
    "DeepSIDProfile": "https://deepsid.chordian.net/?file=/MUSICIANS/{parameter}",
    "DeepSIDTrack": "https://deepsid.chordian.net/?file={parameter}",
    "Defacto2File": "https://defacto2.net/f/{parameter}",
    "Defacto2Group": "https://defacto2.net/g/{parameter}",
    "Defacto2Person": "https://defacto2.net/p/{parameter}",
    "DemopartyNetParty": "https://www.demoparty.net/{parameter}",
    "DemopartyNetPartySeries": "https://www.demoparty.net/{parameter}",
    "DemopartyNetUser": "https://www.demoparty.net/users/{parameter}",
    "DemosceneTvVideo": "http://demoscene.tv/page.php?id=172&vsmaction=view_prod&id_prod={parameter}",
    "DeviantartUser": "http://{parameter}.deviantart.com",
    "DhsVideoDbVideo": "http://dhs.nu/video.php?ID={parameter}",
    "DiscogsArtist": "https://www.discogs.com/artist/{parameter}",
    "DiscogsLabel": "https://www.discogs.com/label/{parameter}",
    "DosDemosVideo": "https://dosdemos.com/demo/{parameter}",
    "EventsRetrosceneRelease": "https://events.retroscene.org/{parameter}",
    "FacebookPage": "https://www.facebook.com/{parameter}",
    "FujiologyFile": "https://fujiology.org{parameter}",
    "FujiologyFolder": "https://fujiology.org{parameter}",
    "GameboyDemospottingAuthor": "http://gameboy.modermodemet.se/en/author/{parameter}",
    "GameboyDemospottingDemo": "http://gameboy.modermodemet.se/en/demo/{parameter}",
    "GithubAccount": "https://github.com/{parameter}",
    "GithubRepo": "https://github.com/{parameter}",
    "GooglePlusEvent": "https://plus.google.com/u/0/events/{parameter}",
    "GooglePlusPage": "https://plus.google.com/{parameter}/",
    "HallOfLightArtist": "http://hol.abime.net/hol_search.php?N_ref_artist={parameter}",
    "HallOfLightGame": "http://hol.abime.net/{parameter}",
    "HearthisTrack": "https://hearthis.at/{parameter}",
    "HearthisUser": "https://hearthis.at/{parameter}/",
    "InstagramAccount": "https://www.instagram.com/{parameter}",
    "InternetArchivePage": "https://archive.org/details/{parameter}",
    "KestraBitworldAuthor": "https://janeway.exotica.org.uk/author.php?id={parameter}",
    "KestraBitworldParty": "https://janeway.exotica.org.uk/party.php?id={parameter}",
    "KestraBitworldPartySeries": "https://janeway.exotica.org.uk/series.php?id={parameter}",
    "KestraBitworldRelease": "https://janeway.exotica.org.uk/release.php?id={parameter}",
    "LanyrdEvent": "http://lanyrd.com/{parameter}/",
    "LinkedInUser": "https://www.linkedin.com/in/{parameter}",
    "LivecodeDemozooEvent": "https://livecode.demozoo.org/serie/{parameter}.html",
    "MobygamesDeveloper": "https://www.mobygames.com/developer/sheet/view/developerId,{parameter}/",
    "ModarchiveMember": "https://modarchive.org/member.php?{parameter}",
    "ModarchiveModule": "https://modarchive.org/module.php?{parameter}",
    "ModlandFile": "https://ftp.modland.com{parameter}",
    "NectarineArtist": "https://scenestream.net/demovibes/artist/{parameter}/",
    "NectarineGroup": "https://scenestream.net/demovibes/group/{parameter}/",
    "NectarineSong": "https://scenestream.net/demovibes/song/{parameter}/",
    "PaduaOrgFile": "ftp://ftp.padua.org/pub/c64{parameter}",
    "PartyWikiParty": "https://party.darklite.org/{parameter}/",
    "Pico8Cart": "https://www.lexaloffle.com/bbs/?tid={parameter}",
    "Pico8User": "https://www.lexaloffle.com/bbs/?uid={parameter}",
    "PixeljointArtist": "http://pixeljoint.com/p/{parameter}.htm",
    "PixeljointImage": "http://pixeljoint.com/pixelart/{parameter}.htm",
    "Plus4WorldCompo": "http://plus4world.powweb.com/compos/{parameter}",
    "Plus4WorldGroup": "http://plus4world.powweb.com/groups/{parameter}",
    "Plus4WorldMember": "http://plus4world.powweb.com/members/{parameter}",
    "Plus4WorldProduction": "http://plus4world.powweb.com/software/{parameter}",
    "Plus4WorldProfile": "http://plus4world.powweb.com/profile/{parameter}",
    "PolyworkUser": "https://www.polywork.com/{parameter}",
    "PouetBBS": "https://www.pouet.net/boards.php?which={parameter}",
    "PouetGroup": "https://www.pouet.net/groups.php?which={parameter}",
    "PouetPartySeries": "https://www.pouet.net/party.php?which={parameter}",
    "PouetProduction": "https://www.pouet.net/prod.php?which={parameter}",
    "PushnpopGroup": "http://pushnpop.net/group-{parameter}.html",
    "PushnpopParty": "http://pushnpop.net/parties-{parameter}.html",
    "PushnpopProduction": "http://pushnpop.net/prod-{parameter}.html",
    "PushnpopProfile": "http://pushnpop.net/profile-{parameter}.html",
    "SceneidAccount": "https://www.pouet.net/user.php?who={parameter}",
    "ScenesatAct": "https://scenesat.com/act/{parameter}",
    "ScenesatTrack": "https://scenesat.com/track/{parameter}",
    "ShadertoyShader": "https://www.shadertoy.com/view/{parameter}",
    "ShadertoyUser": "https://www.shadertoy.com/user/{parameter}",
    "SixteenColorsArtist": "https://16colo.rs/artist/{parameter}",
    "SixteenColorsGroup": "https://16colo.rs/group/{parameter}",
    "SixteenColorsPack": "https://16colo.rs/pack/{parameter}/",
    "SlengpungParty": "http://www.slengpung.com/?eventid={parameter}",
    "SlengpungUser": "http://www.slengpung.com/?userid={parameter}",
    "SoundcloudTrack": "https://soundcloud.com/{parameter}",
    "SoundcloudUser": "https://soundcloud.com/{parameter}/",
    "SpeccyPlAuthor": "http://speccy.pl/archive/author.php?id={parameter}",
    "SpeccyPlProduction": "http://speccy.pl/archive/prod.php?id={parameter}",
    "SpeccyWikiPage": "http://speccy.info/{parameter}",
    "SpectrumComputingRelease": "https://spectrumcomputing.co.uk/entry/{parameter}",
    "SpotifyArtist": "https://play.spotify.com/artist/{parameter}",
    "SpotifyTrack": "https://play.spotify.com/track/{parameter}",
    "StonishDisk": "http://stonish.net/{parameter}",
    "TelnetBBSGuideBBS": "https://www.telnetbbsguide.com/bbs/{parameter}/",
    "TelnetLink": "telnet://{parameter}",
    "Tic80Cart": "https://tic80.com/play?cart={parameter}",
    "Tic80Dev": "https://tic80.com/dev?id={parameter}",
    "TikTokUser": "https://www.tiktok.com/@{parameter}",
    "TwitchChannel": "https://twitch.tv/{parameter}",
    "TwitterAccount": "https://twitter.com/{parameter}",
    "UntergrundFile": "https://ftp.untergrund.net{parameter}",
    "VimeoUser": "https://vimeo.com/{parameter}",
    "VimeoVideo": "https://vimeo.com/{parameter}",
    "WaybackMachinePage": "https://web.archive.org/web/{parameter}",
    "YoutubeChannel": "https://www.youtube.com/channel/{parameter}",
    "YoutubeUser": "https://www.youtube.com/@{parameter}",
    "ZXPressIssue": "https://zxpress.ru/issue.php?id={parameter}",
    "ZxArtAuthor": "https://zxart.ee/eng/authors/{parameter}/",
    "ZxArtGroup": "https://zxart.ee/eng/groups/{parameter}/",
    "ZxArtMusic": "https://zxart.ee/eng/authors/{parameter}/",
    "ZxArtParty": "https://zxart.ee/eng/parties/{parameter}/",
    "ZxArtPicture": "https://zxart.ee/eng/authors/{parameter}/",
    "ZxArtProduction": "https://zxart.ee/eng/authors/{parameter}/",
    "ZxTunesArtist": "http://zxtunes.com/author.php?id={parameter}&ln=eng",
    "ZxdemoAuthor": "https://zxdemo.org/author.php?id={parameter}",
    "ZxdemoItem": "https://zxdemo.org/item.php?id={parameter}",
    "ZxdemoParty": "https://zxdemo.org/party.php?id={parameter}",
}


def _parts(parameter, count):
    parts = parameter.split("/")
    if len(parts) != count:
        raise ValueError(f"expected {count} parts separated by '/', not {parameter!r}")
    return parts


def _scene_org(kind):
    def build(parameter):
        try:
            encoded = parameter.encode("iso-8859-1")
        except UnicodeEncodeError:
            raise ValueError(f"{parameter!r} is not ISO-8859-1 text") from None
        return f"https://files.scene.org/{kind}{quote(encoded, safe='/')}"

    return build


def _bandcamp(parameter):
    artist, track = _parts(parameter, 2)
    return f"https://{artist}.bandcamp.com/track/{track}"


def _discogs(parameter):
    release, slug = _parts(parameter, 2)
    return f"http://www.discogs.com/{slug}/release/{release}"


def _dop(parameter):
    magazine, edition = _parts(parameter, 2)
    return f"https://diskmag.conspiracy.hu/magazine/{magazine}/#/edition={edition}"


def _github_directory(parameter):
    user, repository, *path = parameter.split("/")
    if not path:
        raise ValueError(f"expected user/repository/path, not {parameter!r}")
    return f"http://github.com/{user}/{repository}/tree/{'/'.join(path)}"


def _pouet_party(parameter):
    which, when = _parts(parameter, 2)
    return f"https://www.pouet.net/party.php?which={which}&when={when}"


def _youtube_video(parameter):
    if "/" in parameter:
        video, start = parameter.split("/", 1)
        return f"https://www.youtube.com/watch?v={video}&t={start}"
    return f"https://www.youtube.com/watch?v={parameter}"


def _whole(parameter):
    return parameter


RULES = {
    "BandcampTrack": _bandcamp,
    "BaseUrl": _whole,
    "DiscogsRelease": _discogs,
    "DOPEdition": _dop,
    "GithubDirectory": _github_directory,
    "MastodonAccount": _whole,
    "PouetParty": _pouet_party,
    "SceneOrgFile": _scene_org("view"),
    "SceneOrgFolder": _scene_org("browse"),
    "WikipediaPage": _whole,
    "YoutubeVideo": _youtube_video,
}


def link_url(link_class, parameter):
    """The URL the upstream's API shows for a stored link. ValueError for a class it
    does not know, or a parameter the class cannot take."""
    rule = RULES.get(link_class)
    if rule is not None:
        return rule(parameter)
    form = FORMATS.get(link_class)
    if form is None:
        raise ValueError(f"unknown link class {link_class!r}")
    return form.replace("{parameter}", parameter)


def external_links_key(link_class):
    """A production's external links: BaseUrl first, then by class (code point)."""
    return "0000" if link_class == "BaseUrl" else link_class
